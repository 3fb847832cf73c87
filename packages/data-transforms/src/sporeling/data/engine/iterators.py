"""Tuple and dict iterators: epochs, prefetch, Tensor conversion, saved positions.

An iterator runs the dataset graph in a background thread that fills a bounded queue of
``config.get_prefetch_size()`` rows (batches); errors raised there are re-raised by the
consumer's ``next()`` at once. Each ``for`` loop over the iterator is one epoch
(``StopIteration`` at its end); the next loop starts the next epoch, up to ``num_epochs``
(-1: no limit).

Resuming mid-epoch::

    it = ds.create_tuple_iterator(num_epochs=3)
    ...                                  # consume some batches
    state = it.get_state()               # {'epoch': 1, 'step': 7, 'seed': ..., ...}
    # later, possibly in a new process, with the same pipeline:
    it = ds.create_tuple_iterator(num_epochs=2, state=state)   # or it.set_state(state)

The resumed iterator yields exactly the batches the first one would have yielded after
``state`` (same shuffles and random augmentations, since the seed is part of the state and
every draw is keyed by (seed, epoch, node, row)). ``num_epochs`` counts epochs from the
resumed one, which counts as one.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections import deque
from collections.abc import Generator
from typing import Any

import numpy as np

from .base import Dataset, Run, base_seed_for_run, check_columns, check_int, check_known

__all__ = ["TupleIterator", "DictIterator"]

_EPOCH_END = object()


class _Failure:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def _prefetch_size() -> int:
    try:
        from .. import config

        return max(int(config.get_prefetch_size()), 1)
    except Exception:
        return 16


# Rows go to the consumer in chunks: a queue hand-off per row (a lock, a wake-up and a GIL
# switch between the two threads) cost more than reading a MindRecord row, and made the
# 1-worker MindDataset read ~1.7x more CPU per row (benchmarks/ms-formats). A chunk is sent
# when it holds _CHUNK_ROWS rows, when its first row waited _CHUNK_SECONDS (slow rows such as
# decoded images or batches still go one by one), or when the prefetch bound is reached: at
# most ``prefetch_size`` rows are produced and not yet consumed, as before.
_CHUNK_ROWS = 64
_CHUNK_SECONDS = 0.002


class _Producer:
    """Runs epochs of the graph in a thread and feeds a queue of row chunks, at most
    ``config.get_prefetch_size()`` rows ahead of the consumer."""

    def __init__(self, root: Dataset, run: Run, epoch: int, step: int, epochs: int) -> None:
        self.q: queue.Queue[Any] = queue.Queue()  # bounded by the row counts below
        self.limit = _prefetch_size()
        self.produced = 0  # rows handed to the queue or the chunk in hand (producer only)
        self.consumed = 0  # rows taken by the consumer (consumer only)
        self.waiting = False  # the producer waits for room
        self.room = threading.Event()
        self.buffer: deque[Any] = deque()  # the consumer's side of the current chunk
        self.stop_event = threading.Event()
        self.thread = threading.Thread(
            target=self._main,
            args=(root, run, epoch, step, epochs),
            name="sporeling-data-prefetch",
            daemon=True,
        )
        self.thread.start()

    def _put(self, item: Any) -> bool:
        while not self.stop_event.is_set():
            try:
                self.q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _main(self, root: Dataset, run: Run, epoch: int, step: int, epochs: int) -> None:
        chunk: list[Any] = []
        try:
            done = 0
            clock = time.perf_counter
            while epochs == -1 or done < epochs:
                stream = root._stream(run, epoch, step)
                try:
                    started = 0.0
                    for row, _ in stream:
                        if self.produced - self.consumed >= self.limit:
                            if chunk:  # hand over what is held before waiting for room
                                if not self._put(chunk):
                                    return
                                chunk = []
                            if not self._wait_for_room():
                                return
                        if not chunk:
                            started = clock()
                        chunk.append(row)
                        self.produced += 1
                        if len(chunk) >= _CHUNK_ROWS or clock() - started >= _CHUNK_SECONDS:
                            if not self._put(chunk):
                                return
                            chunk = []
                finally:
                    stream.close()  # type: ignore[attr-defined]
                chunk.append(_EPOCH_END)
                if not self._put(chunk):
                    return
                chunk = []
                epoch, step, done = epoch + 1, 0, done + 1
        except BaseException as exc:  # handed to the consumer, after the rows before it
            chunk.append(_Failure(exc))
            self._put(chunk)
        finally:
            run.close()

    def _wait_for_room(self) -> bool:
        while not self.stop_event.is_set():
            self.waiting = True
            self.room.clear()
            if self.produced - self.consumed < self.limit:
                self.waiting = False
                return True
            self.room.wait(0.1)
        return False

    def get(self) -> Any:
        if not self.buffer:
            while True:
                try:
                    self.buffer.extend(self.q.get(timeout=0.1))
                    break
                except queue.Empty:
                    if not self.thread.is_alive() and self.q.empty():
                        return _Failure(RuntimeError("iterator: the pipeline thread stopped"))
        item = self.buffer.popleft()
        if item is not _EPOCH_END and not isinstance(item, _Failure):
            self.consumed += 1
            if self.waiting:
                self.room.set()
        return item

    def stop(self) -> None:
        self.stop_event.set()
        self.room.set()
        if self.thread is not threading.current_thread():
            self.thread.join(timeout=10)


class _Inline:
    """The same as _Producer without a thread (used for one-off peeks)."""

    def __init__(self, root: Dataset, run: Run, epoch: int, step: int, epochs: int) -> None:
        self.run = run
        self.gen: Generator[Any, None, None] = self._gen(root, epoch, step, epochs)

    def _gen(self, root: Dataset, epoch: int, step: int, epochs: int) -> Generator[Any, None, None]:
        done = 0
        while epochs == -1 or done < epochs:
            for row, _ in root._stream(self.run, epoch, step):
                yield row
            yield _EPOCH_END
            epoch, step, done = epoch + 1, 0, done + 1

    def get(self) -> Any:
        try:
            return next(self.gen)
        except StopIteration:
            return _EPOCH_END
        except BaseException as exc:
            return _Failure(exc)

    def stop(self) -> None:
        self.gen.close()
        self.run.close()


class TupleIterator:
    """Rows as lists of core Tensors (NumPy arrays with ``output_numpy=True``)."""

    _where = "create_tuple_iterator"

    def __init__(
        self,
        dataset: Dataset,
        columns: list[str] | None,
        num_epochs: int,
        output_numpy: bool,
        do_copy: bool,
        prefetch: bool = True,
    ) -> None:
        where = self._where
        if not isinstance(dataset, Dataset):
            raise TypeError(f"{where}: expected a Dataset, got {type(dataset).__name__}")
        num_epochs = check_int(where, "num_epochs", num_epochs)
        if num_epochs == 0 or num_epochs < -1:
            raise ValueError(
                f"{where}: argument 'num_epochs' expected -1 or an int >= 1, got {num_epochs}"
            )
        if not isinstance(output_numpy, bool):
            raise TypeError(
                f"{where}: argument 'output_numpy' expected a bool, got {output_numpy!r}"
            )
        if not isinstance(do_copy, bool):
            raise TypeError(f"{where}: argument 'do_copy' expected a bool, got {do_copy!r}")
        cols = dataset.get_col_names()
        picked = check_columns(where, "columns", columns)
        if picked is not None:
            check_known(where, "columns", picked, cols)
            self._idx: list[int] | None = [cols.index(c) for c in picked]
            self._cols = picked
        else:
            self._idx = None
            self._cols = cols
        self._dataset = dataset
        self._num_epochs = num_epochs
        self._output_numpy = output_numpy
        self._do_copy = do_copy
        self._use_thread = prefetch
        self._epoch = dataset.epoch
        self._step = 0
        self._epochs_done = 0
        self._seed, self._seeded = base_seed_for_run()
        self._producer: Any = None
        self._run: Run | None = None
        self._skipped: list[tuple[Any, str]] = []
        self._finished = False

    # -- state ---------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """The position after the rows consumed so far (a small JSON-able dict)."""
        return {
            "epoch": self._epoch,
            "step": self._step,
            "seed": self._seed,
            "seeded": self._seeded,
            "dataset_size": self._dataset.get_dataset_size(),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Continue from ``state`` (from :meth:`get_state`): the next row is the one after it."""
        where = f"{type(self).__name__}.set_state"
        if not isinstance(state, dict) or not {"epoch", "step", "seed"} <= set(state):
            raise ValueError(f"{where}: expected a dict from get_state(), got {state!r}")
        size = self._dataset.get_dataset_size()
        if "dataset_size" in state and state["dataset_size"] != size:
            raise ValueError(
                f"{where}: the state was saved for a dataset of {state['dataset_size']} rows per "
                f"epoch, this one has {size}; resume with the same pipeline"
            )
        epoch = check_int(where, "state['epoch']", state["epoch"], 0)
        step = check_int(where, "state['step']", state["step"], 0)
        self.stop()
        self._epoch, self._step = epoch, step
        self._seed = int(state["seed"])
        self._seeded = bool(state.get("seeded", True))
        self._epochs_done = 0
        self._finished = False
        if size != -1 and step >= size:  # saved right at an epoch's end
            self._epoch, self._step = epoch + 1, 0

    @property
    def skipped(self) -> list[tuple[Any, str]]:
        """(origin, message) of each row dropped by ``on_error='skip'`` so far."""
        return list(self._run.skipped if self._run is not None else self._skipped)

    # -- iteration -------------------------------------------------------------------------
    def __iter__(self) -> TupleIterator:
        return self

    def _start(self) -> None:
        remaining = -1 if self._num_epochs == -1 else self._num_epochs - self._epochs_done
        self._run = Run(self._dataset, self._seed, self._seeded)
        cls = _Producer if self._use_thread else _Inline
        self._producer = cls(self._dataset, self._run, self._epoch, self._step, remaining)

    def _next_row(self) -> tuple[Any, ...]:
        if self._finished or (self._num_epochs != -1 and self._epochs_done >= self._num_epochs):
            raise StopIteration
        if self._producer is None:
            self._start()
        item = self._producer.get()
        if item is _EPOCH_END:
            self._epochs_done += 1
            self._epoch += 1
            self._step = 0
            self._dataset._epoch = max(self._dataset._epoch, self._epoch)
            if self._num_epochs != -1 and self._epochs_done >= self._num_epochs:
                self.stop()
            raise StopIteration
        if isinstance(item, _Failure):
            self.stop()
            self._finished = True
            raise item.exc
        self._step += 1
        row = item if self._idx is None else tuple(item[i] for i in self._idx)
        return tuple(self._convert(v) for v in row)

    def _convert(self, value: Any) -> Any:
        arr = np.asarray(value)
        if self._output_numpy or arr.dtype.kind in "USOb" and arr.dtype.kind != "b":
            return arr
        from sporeling.core import Tensor

        return Tensor.from_numpy(arr.copy() if self._do_copy and not arr.flags.owndata else arr)

    def __next__(self) -> list[Any]:
        return list(self._next_row())

    def stop(self) -> None:
        """Stop the background thread and the workers (the iterator can be resumed)."""
        if self._producer is not None:
            if self._run is not None:
                self._skipped = list(self._run.skipped)
            self._producer.stop()
            self._producer = None

    close = stop

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.stop()

    def get_col_names(self) -> list[str]:
        return list(self._cols)


class DictIterator(TupleIterator):
    """Rows as ``{column: Tensor}`` dicts (NumPy arrays with ``output_numpy=True``)."""

    _where = "create_dict_iterator"

    def __next__(self) -> dict[str, Any]:  # type: ignore[override]
        return dict(zip(self._cols, self._next_row()))
