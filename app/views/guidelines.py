"""Guidelines (researchers): write a dataset's labelling guidelines, rule list, label keys and
idle cap.

Annotators see the guidelines and rules on the Annotate page, and the picker uses the label
keys and rule numbers. Markdown is shown safely (HTML and images appear as the text typed).
Saving adds a version; earlier versions stay listed, and a save based on an outdated version
is refused instead of overwriting someone else's edit.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.components import auth, guidelines_view
from qaeval_core import store
from qaeval_core.errors import QAEvalError

S = st.session_state
RULE_COLUMNS = ["name", "description", "example"]


def _rules_frame(guide: store.Guidelines) -> pd.DataFrame:
    return pd.DataFrame(
        [[r.name, r.description, r.example] for r in guide.rules], columns=RULE_COLUMNS
    )


def _edited_rules(guide: store.Guidelines, key: str) -> list[dict[str, str]]:
    """The rule table as edited: the data editor keeps only its changes in session state."""
    frame = _rules_frame(guide)
    changes = S.get(key) or {}
    for row, cols in (changes.get("edited_rows") or {}).items():
        for col, value in cols.items():
            frame.loc[int(row), col] = value
    frame = frame.drop(index=[int(i) for i in changes.get("deleted_rows") or []])
    added = pd.DataFrame(changes.get("added_rows") or [], columns=RULE_COLUMNS)
    rows = pd.concat([frame, added], ignore_index=True).fillna("").to_dict("records")
    return [r for r in rows if any(str(v).strip() for v in r.values())]


def _save(url: str, user: str, dataset: str, based_on: int) -> None:
    guide = store.get_guidelines(url, dataset)
    try:
        saved = store.save_guidelines(
            url,
            dataset,
            user,
            text=S.get(f"gl_text_{dataset}_{based_on}", ""),
            rules=_edited_rules(guide, f"gl_rules_{dataset}_{based_on}"),
            label_keys={
                n: S.get(f"gl_key_{n}_{dataset}_{based_on}", "")
                for n in ("correct", "unclear", "incorrect")
            },
            idle_cap_seconds=S.get(f"gl_cap_{dataset}_{based_on}", 60.0),
            roles=auth.RESEARCHERS,
            based_on=based_on,
        )
    except QAEvalError as exc:
        S.gl_flash = ("error", str(exc))
        return
    S.gl_flash = ("success", f"Saved version {saved.version} of {dataset}'s guidelines.")


def main() -> None:
    user = auth.page_setup("Guidelines", auth.RESEARCHERS)
    url = auth.store_url()
    names = [d.name for d in store.list_datasets(url)]
    if not names:
        st.info("There is no data yet: import a dataset on the Data page.")
        return
    dataset = st.selectbox("Dataset", names, key="gl_dataset")
    guide = store.get_guidelines(url, dataset)
    if flash := S.pop("gl_flash", None):
        getattr(st, flash[0])(flash[1])
    v = guide.version
    st.caption(
        f"Editing version {v}"
        if v
        else "This dataset uses the default guidelines (no version saved yet)."
    )
    edit, preview = st.columns(2, gap="large")
    with edit:
        st.text_area("Guidelines (markdown)", guide.text, height=260, key=f"gl_text_{dataset}_{v}")
        st.markdown("**Rules** (keys 1-9, in this order; at most 9)")
        st.data_editor(
            _rules_frame(guide),
            num_rows="dynamic",
            hide_index=True,
            key=f"gl_rules_{dataset}_{v}",
            width="stretch",
        )
        keys = st.columns(4)
        for col, name in zip(keys, ("correct", "unclear", "incorrect"), strict=False):
            col.text_input(
                f"Key: {name}",
                guide.label_keys[name],
                max_chars=1,
                key=f"gl_key_{name}_{dataset}_{v}",
            )
        keys[3].number_input(
            "Idle cap (s)", 5.0, 3600.0, float(guide.idle_cap_seconds), key=f"gl_cap_{dataset}_{v}"
        )
        st.button(
            "Save as a new version",
            type="primary",
            key="gl_save",
            on_click=_save,
            args=(url, user.name, dataset, v),
        )
    with preview:
        st.markdown("**Preview** (as annotators see it)")
        st.markdown(guidelines_view.safe_markdown(S.get(f"gl_text_{dataset}_{v}", guide.text)))
        guidelines_view.show_rules(guide)
    history = store.guideline_history(url, dataset)
    if history:
        with st.expander(f"History ({len(history)} versions)"):
            for g in history:
                when = g.created_at.strftime("%Y-%m-%d %H:%M") if g.created_at else ""
                st.text(
                    f"version {g.version} · {when} · {g.created_by or '?'} · "
                    f"{len(g.rules)} rules · keys {'/'.join(g.label_keys.values())} · "
                    f"idle cap {g.idle_cap_seconds:g} s"
                )


if __name__ == "__main__":
    main()
