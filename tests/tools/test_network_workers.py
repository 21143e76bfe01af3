"""The proxy's copying threads (``tools.network.relay.Workers``): every job gets a thread
of its own at once (a tunnel's copy may last as long as its command, so a job queued
behind another could wait forever), an idle thread is reused, and one idle too long
ends without taking a later job with it."""

from __future__ import annotations

import threading

from tools.network.relay import Workers

WAIT = 5.0


def run_all(workers: Workers, count: int) -> list[int]:
    """``count`` jobs that each wait for all the others: the threads they ran on."""
    barrier = threading.Barrier(count, timeout=WAIT)
    threads: list[int] = []
    done = threading.Semaphore(0)

    def job() -> None:
        try:
            barrier.wait()
            threads.append(threading.get_ident())
        finally:
            done.release()

    for _ in range(count):
        workers.run(job)
    for _ in range(count):
        assert done.acquire(timeout=WAIT + 1)
    assert len(threads) == count, "a job waited behind another instead of running"
    return threads


def test_jobs_that_wait_on_each_other_all_run_at_once() -> None:
    workers = Workers()
    first = run_all(workers, 4)
    assert len(set(first)) == 4
    again = run_all(workers, 6)  # four idle threads taken again, two more started
    assert len(set(again)) == 6
    assert set(first) <= set(again)


def test_an_idle_thread_is_reused() -> None:
    workers = Workers()
    assert run_all(workers, 1) == run_all(workers, 1)


def test_a_thread_idle_too_long_ends_and_a_later_job_still_runs() -> None:
    workers = Workers(idle_seconds=0.05)
    ran_on: list[threading.Thread] = []
    done = threading.Event()

    def job() -> None:
        ran_on.append(threading.current_thread())
        done.set()

    workers.run(job)
    assert done.wait(WAIT)
    ran_on[0].join(WAIT)
    assert not ran_on[0].is_alive(), "an idle thread was kept past idle_seconds"
    done.clear()
    workers.run(job)
    assert done.wait(WAIT), "a job was handed to a thread that had ended"
    assert ran_on[1] is not ran_on[0]
