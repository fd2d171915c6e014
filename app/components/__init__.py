"""Code the views share, one concept per module.

- :mod:`~app.components.auth`: logging in and out, login sessions, roles, the page guard.
- :mod:`~app.components.safe_text`: untrusted text as inert markdown, highlighting, headings.
- :mod:`~app.components.analysis_widgets`: cached analysis results and the widgets of the
  analysis views.
- :mod:`~app.components.label_picker`: the Annotate view's label and rule buttons.
"""
