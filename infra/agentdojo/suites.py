"""What the evaluation knows of AgentDojo's suites: the version, which functions write,
and each person's environment file.

A function "writes" when calling it has an effect outside the conversation: it changes
the environment (every one AgentDojo's ground truths change, found by `bench.py
classify`) or sends something out. `get_webpage` is one: it fetches a URL the model chose
(and the environment logs the request), so data can leave through it — slack's
injection task 3 succeeds through it. `get_unread_emails` marks what it returns as read;
that is bookkeeping inside the mailbox, not an effect on anyone else, and it stays a
read (a consultation).
"""
import hashlib
import pickle
import re
from pathlib import Path

from agentdojo.task_suite.load_suites import get_suite

VERSION = "v1.2.2"
SUITES = ("banking", "slack", "travel", "workspace")

WRITES = {
    "banking": {"send_money", "schedule_transaction", "update_scheduled_transaction",
                "update_password", "update_user_info"},
    "slack": {"add_user_to_channel", "send_direct_message", "send_channel_message",
              "invite_user_to_slack", "remove_user_from_slack", "post_webpage", "get_webpage"},
    "travel": {"create_calendar_event", "cancel_calendar_event", "reserve_hotel",
               "reserve_car_rental", "reserve_restaurant", "send_email"},
    "workspace": {"send_email", "delete_email", "create_calendar_event", "cancel_calendar_event",
                  "reschedule_calendar_event", "add_calendar_event_participants",
                  "append_to_file", "create_file", "delete_file", "share_file"},
}


# Functions whose only effect outside the conversation is a request to a URL the model
# chose: reads by name, writes by effect.
FETCHES = {"get_webpage"}


def suite(name):
    return get_suite(VERSION, name)


def state_file(states: Path, person: str) -> Path:
    """The file holding `person`'s environment and the calls made on it."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", person)[:80]
    digest = hashlib.sha256(person.encode()).hexdigest()[:12]
    return states / f"{safe}-{digest}.pickle"


def save(path: Path, state: dict) -> None:
    """Atomically: a reader never sees half a file. Pickle, because AgentDojo's
    environments do not survive a JSON round trip after writes (their validators rebuild
    mailboxes, calendars and drives from their initial lists)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(state))
    tmp.replace(path)


def load(path: Path) -> dict:
    return pickle.loads(path.read_bytes())
