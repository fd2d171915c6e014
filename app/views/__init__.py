"""The app's pages, one file each, routed by ``st.navigation`` in ``app/main.py``.

Streamlit runs each file as ``__main__``; tests import their helpers. The folder is not called
``pages/``: next to the entry file that name switches Streamlit to its legacy multipage mode.
"""
