"""moto_server with one request processed at a time.

moto's own `moto_server` handles requests on many threads with no lock around its
in-memory backends, so two concurrent `TransactWriteItems` can both pass their conditions
before either applies its writes. Real DynamoDB never allows that: conditional writes and
transactions on an item are serialised. Countersign's concurrency tests (P-2: exactly one
confirmation wins) need that guarantee, so this launcher keeps moto's threaded HTTP server
(many clients connected at once) but runs the application behind one lock.

It also makes one change for speed, not behaviour: moto backs up a whole table once per
*item* of a `TransactWriteItems` (a deep copy of every item of the table, each time) to
roll back on failure, so a transaction costs time in proportion to the table's size (about
0.5 s per confirmation once a tenant has 1,000 pending proposals). Here the rollback keeps
a journal instead: a copy of each item the transaction names, taken before it runs, and
put back (or removed, if it did not exist) when it fails. Rollback restores the same
state; a transaction costs time in proportion to its own items.

And one more of the same kind: moto answers a table `Query` by listing every item of the
table, sorted, and keeping those of the queried partition, so each Query costs time in
proportion to the whole table (a C-8 sweep over 10,000 registrations spent minutes
there). Here a table Query (not an index's) is given only its partition's items; moto
filters, sorts and pages them exactly as before.

And one more for speed alone, measured with cProfile over acceptance tests (decision 0056):
moto lists its own package directory (`os.listdir`, then `os.path.isdir` per entry) on
every request to find the service a host names: 13% of a request's time. The list is read
once here (it cannot change while the server runs).

And the one change of behaviour AWS makes and moto does not (I-1, decision 0081): every
call is authorised as IAM authorises it, for its principal, with the policies of
`template.yaml` and `bridge/template.yaml` (`iam/enforce.py`).

Usage: python moto_serialized.py HOST PORT
"""

import copy
import sys
import threading
from pathlib import Path

import moto.backends as moto_backends
import moto.dynamodb.models as dynamodb_models
from moto.dynamodb.models.dynamo_type import DynamoType

from werkzeug.serving import run_simple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from iam import enforce as iam_enforce  # noqa: E402

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)


class Serialized:
    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        with self.lock:
            # Materialise the body inside the lock so that no backend work escapes it.
            return list(self.app(environ, start_response))


class _NoTableCopy:
    """Stands in for the `copy` module inside moto's DynamoDB models during one
    transaction: a Table "copy" is the table itself (the journal below restores what
    changes), other objects are copied as usual."""

    def deepcopy(self, obj, memo=None):
        if isinstance(obj, dynamodb_models.Table):
            return obj
        return copy.deepcopy(obj, memo)


_original_transact = dynamodb_models.DynamoDBBackend.transact_write_items


def _journal(backend, transact_items):
    """(table, hash key, range key, the item before the transaction or None) for every
    item the transaction names; names the original rejects are skipped (it raises before
    writing anything for them)."""
    entries = []
    for entry in transact_items:
        if not isinstance(entry, dict) or len(entry) != 1:
            continue
        (op,) = entry.values()
        table = backend.tables.get(op.get("TableName")) if isinstance(op, dict) else None
        if table is None:
            continue
        attrs = op.get("Item") or op.get("Key") or {}
        try:
            hash_key = DynamoType(attrs[table.hash_key_attr])
            range_key = (
                DynamoType(attrs[table.range_key_attr]) if table.range_key_attr else None
            )
            before = table.get_item(hash_key, range_key)
        except Exception:  # noqa: BLE001 - a malformed key: the original rejects it
            continue
        entries.append((table, hash_key, range_key, copy.deepcopy(before)))
    return entries


def _restore(entries):
    for table, hash_key, range_key, before in reversed(entries):
        if range_key is not None:
            if before is None:
                table.items[hash_key].pop(range_key, None)
            else:
                table.items[hash_key][range_key] = before
        elif before is None:
            table.items.pop(hash_key, None)
        else:
            table.items[hash_key] = before


def _transact_write_items(self, transact_items):
    # Safe to swap the module global: requests run one at a time (see Serialized).
    entries = _journal(self, transact_items)
    dynamodb_models.copy = _NoTableCopy()
    try:
        return _original_transact(self, transact_items)
    except BaseException:
        _restore(entries)
        raise
    finally:
        dynamodb_models.copy = copy


dynamodb_models.DynamoDBBackend.transact_write_items = _transact_write_items


_original_query = dynamodb_models.Table.query


def _query(self, hash_key, *args, **kwargs):
    # Positional order of moto's `Table.query` after `hash_key`: range_comparison,
    # range_objs, limit, exclusive_start_key, scan_index_forward, projection_expressions,
    # index_name.
    index_name = kwargs.get("index_name", args[6] if len(args) > 6 else None)
    if index_name is not None or hash_key is None or not self.range_key_attr:
        return _original_query(self, hash_key, *args, **kwargs)
    partition = list(self.items[hash_key].values()) if hash_key in self.items else []
    # The instance attribute shadows the method for this one call (requests run one at a
    # time, see Serialized).
    self.all_items = lambda: partition
    try:
        return _original_query(self, hash_key, *args, **kwargs)
    finally:
        del self.all_items


dynamodb_models.Table.query = _query


_MODULES = tuple(moto_backends.list_of_moto_modules())
moto_backends.list_of_moto_modules = lambda: _MODULES


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    app = DomainDispatcherApplication(create_backend_app)
    # I-1: every call is decided against its principal's policies from the templates,
    # inside the lock (the registry reads moto's backends).
    app = iam_enforce.install(app, Path(__file__).resolve().parents[2])
    run_simple(
        host,
        port,
        Serialized(app),
        threaded=True,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    main()
