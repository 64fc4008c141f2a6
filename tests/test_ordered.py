import concurrent.futures
import random
import threading
import time

import pytest

from detect.engine.ordered import OrderedConsumer


def test_slots_are_consumed_in_index_order_whatever_order_they_arrive():
    seen = []
    consumer = OrderedConsumer(seen.append, lambda i, e: ("failed", i), max_pending=100)
    order = list(range(50))
    random.Random(1).shuffle(order)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for i in order:
            consumer.put(i, pool.submit(lambda i=i: (time.sleep(0.001 * (i % 3)), i)[1]) if i % 2 else i)
        consumer.close()
    assert seen == list(range(50))


def test_a_failed_future_goes_to_the_error_handler_and_the_rest_continue():
    seen = []
    consumer = OrderedConsumer(seen.append, lambda i, e: f"failed {i}: {e}", max_pending=10)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        consumer.put(0, pool.submit(lambda: "ok"))
        consumer.put(1, pool.submit(lambda: 1 / 0))
        consumer.put(2, "plain")
        consumer.close()
    assert seen == ["ok", "failed 1: division by zero", "plain"]


def test_an_error_in_consume_reaches_the_producer_instead_of_hanging_it():
    def consume(item):
        raise OSError("disk full")

    consumer = OrderedConsumer(consume, lambda i, e: None, max_pending=1)
    consumer.put(0, "x")
    with pytest.raises(OSError, match="disk full"):
        for i in range(1, 1000):
            consumer.put(i, "x")
            consumer.wait_for_room()
    with pytest.raises(OSError, match="disk full"):
        consumer.close()


def test_wait_for_room_blocks_until_the_consumer_catches_up():
    gate = threading.Event()
    consumer = OrderedConsumer(lambda item: gate.wait(), lambda i, e: None, max_pending=2)
    for i in range(4):
        consumer.put(i, i)
    assert consumer.pending > 2
    threading.Timer(0.2, gate.set).start()
    start = time.monotonic()
    consumer.wait_for_room()
    assert time.monotonic() - start >= 0.15 and consumer.pending <= 2
    consumer.close()


def test_close_returns_when_the_producer_stops_early():
    consumer = OrderedConsumer(lambda item: None, lambda i, e: None, max_pending=4)
    consumer.put(1, "index 0 never comes")  # the producer died before handing over index 0
    done = threading.Event()
    threading.Thread(target=lambda: (consumer.close(), done.set()), daemon=True).start()
    assert done.wait(5), "close() hung"


def test_the_initializer_runs_on_the_consumer_thread_before_anything_is_consumed():
    events = []
    consumer = OrderedConsumer(lambda v: events.append(("consume", v, threading.get_ident())), lambda i, e: None,
                               max_pending=4, initializer=lambda: events.append(("init", None, threading.get_ident())))
    consumer.put(0, "a")
    consumer.close()
    assert [e[:2] for e in events] == [("init", None), ("consume", "a")]
    assert events[0][2] == events[1][2] != threading.get_ident()


def test_an_initializer_error_reaches_the_producer():
    def broken() -> None:
        raise RuntimeError("no priority for you")

    consumer = OrderedConsumer(lambda v: None, lambda i, e: None, max_pending=4, initializer=broken)
    with pytest.raises(RuntimeError, match="no priority for you"):
        consumer.close()
