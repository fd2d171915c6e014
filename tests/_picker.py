"""Driving the Annotate page's picker component from AppTest.

AppTest cannot run the browser component, so :func:`send` delivers a message exactly as the
component does: a trigger value of its ``action`` event in Streamlit's widget state, which the
page's callback handles before the rerun. :func:`picker_data` is what the page gave the
component to draw (the item, the pick, the ack of the last message).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from streamlit.components.v2.bidi_component.main import _make_trigger_id
from streamlit.testing.v1 import AppTest

_NONCES = itertools.count()


def picker_data(at: AppTest) -> dict[str, Any]:
    """What the page handed the picker component in the last run (it shows exactly one)."""
    found = list(at.get("bidi_component"))
    assert len(found) == 1, f"expected one picker, found {len(found)}"
    return json.loads(found[0].proto.json)


def send_raw(at: AppTest, msg: dict[str, Any]) -> AppTest:
    """Deliver ``msg`` as the picker's ``action`` trigger and rerun."""
    proto = at.get("bidi_component")[0].proto
    states = at._tree.get_widget_states()
    trigger = states.widgets.add()
    trigger.id = _make_trigger_id(proto.id, "events")
    trigger.json_trigger_value = json.dumps([{"event": "action", "value": msg}])
    at._run(states)
    assert not at.exception, at.exception
    return at


def send(
    at: AppTest, action: str, *, stale: dict[str, Any] | None = None, **fields: Any
) -> AppTest:
    """One picker message for the item and view on screen (or those of ``stale``)."""
    data = stale or picker_data(at)
    msg = {
        "action": action,
        "nonce": f"test-{next(_NONCES)}",
        "view": data["view"],
        "item_id": data["item"]["id"],
        **fields,
    }
    return send_raw(at, msg)
