"""The embedded broker: message files appear whole, and a bad file does not stop the consumer."""

import os

from kombu import Connection

from contextviewer import broker


def _connection(folder):
    broker.install()
    opts = {"data_folder_in": str(folder), "data_folder_out": str(folder), "store_processed": False,
            "control_folder": str(folder), "polling_interval": 0.05}
    return Connection("filesystem://", transport_options=opts)


def test_messages_are_renamed_into_place_and_read_back(tmp_path):
    with _connection(tmp_path) as conn:
        assert type(conn.transport).__module__ == "contextviewer.broker"
        queue = conn.SimpleQueue("jobs-a")  # one queue name per test: kombu keeps declarations per process
        queue.put({"job": 1})
        names = os.listdir(tmp_path)
        assert any(n.endswith(".jobs-a.msg") for n in names)
        assert not any(n.endswith(".partial") for n in names)
        assert queue.get(timeout=10).payload == {"job": 1}
        queue.close()


def test_an_empty_message_file_is_skipped_and_the_next_one_is_delivered(tmp_path):
    with _connection(tmp_path) as conn:
        queue = conn.SimpleQueue("jobs-b")
        (tmp_path / f"0_broken-{os.getpid()}-{tmp_path.name}.jobs-b.msg").write_bytes(b"")  # what a torn write used to leave
        queue.put({"job": 2})
        assert queue.get(timeout=10).payload == {"job": 2}
        queue.close()
