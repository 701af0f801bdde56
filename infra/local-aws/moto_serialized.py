"""moto_server with one request processed at a time.

moto's own `moto_server` handles requests on many threads with no lock around its
in-memory backends, so two concurrent `TransactWriteItems` can both pass their conditions
before either applies its writes. Real DynamoDB never allows that: conditional writes and
transactions on an item are serialised. Countersign's concurrency tests (P-2: exactly one
confirmation wins) need that guarantee, so this launcher keeps moto's threaded HTTP server
(many clients connected at once) but runs the application behind one lock.

It also makes one change for speed, not behaviour: moto backs up a whole table once per
*item* of a `TransactWriteItems` (a deep copy each time) to roll back on failure; here the
backup is taken once per table per transaction. Rollback restores the same state.

Usage: python moto_serialized.py HOST PORT
"""

import copy
import sys
import threading

import moto.dynamodb.models as dynamodb_models

from werkzeug.serving import run_simple

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


class _TableBackupOncePerTransaction:
    """Stands in for the `copy` module inside moto's DynamoDB models during one
    transaction: a Table is deep-copied once, other objects as usual."""

    def __init__(self):
        self.tables = {}

    def deepcopy(self, obj, memo=None):
        if isinstance(obj, dynamodb_models.Table):
            key = id(obj)
            if key not in self.tables:
                self.tables[key] = copy.deepcopy(obj)
            return self.tables[key]
        return copy.deepcopy(obj, memo)


_original_transact = dynamodb_models.DynamoDBBackend.transact_write_items


def _transact_write_items(self, transact_items):
    # Safe to swap the module global: requests run one at a time (see Serialized).
    dynamodb_models.copy = _TableBackupOncePerTransaction()
    try:
        return _original_transact(self, transact_items)
    finally:
        dynamodb_models.copy = copy


dynamodb_models.DynamoDBBackend.transact_write_items = _transact_write_items


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(
        host,
        port,
        Serialized(app),
        threaded=True,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    main()
