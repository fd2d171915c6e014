"""Code the views share, one concept per module.

- :mod:`~app.components.auth`: logging in and out, login sessions, roles, the page guard.
- :mod:`~app.components.safe_text`: untrusted text as inert markdown, highlighting, headings.
- :mod:`~app.components.analysis_widgets`: cached analysis results and the widgets of the
  analysis views.
- :mod:`~app.components.label_picker`: the Annotate view's item card and keyboard, one browser
  component (its JavaScript and CSS: :mod:`~app.components.label_picker_frontend`).
- :mod:`~app.components.guidelines_view`: a dataset's guidelines as safe markdown, its rules.
- :mod:`~app.components.triage_widgets`: the saved-calibration picker, cached final labels and
  estimation frames, and their display (assign, data, explorer, leaderboard).
- :mod:`~app.components.effort_curve`: the Calibrate view's accuracy-vs-human-effort curve.
- :mod:`~app.components.accuracy_estimates`: the Leaderboard's accuracies with valid CIs.
"""
