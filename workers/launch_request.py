"""What the server asks the warm launcher to start: one run's ranks. Torch-free, JSON on the wire."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class LaunchRequest:
    run_id: str
    token: str                  # the ranks' credential on the event port
    lesson: str
    world_size: int
    events_address: str         # "host:port" of the server's event port
    t0: float                   # time.monotonic() at the run's creation: events' t counts from it
    time_limit_s: float
    params: dict = field(default_factory=dict)
    backend: str = "gloo"       # "gloo" or "nccl"
    step: bool = False          # pause each rank before every collective (step mode)
    trace: bool = True          # False only for measuring the tracer's own overhead
    output_bytes: int = 8192    # the tail of each rank's stdout+stderr the supervisor keeps and reports
    sandboxed: bool = False     # the ranks run in the judge's sandbox (a hosted-lab user's own program)
    # on a Ray cluster (app/cluster.py): each node's launcher forks only its own ranks, which meet at
    # a TCPStore that rank 0 serves; "" and None: one machine, every rank, a FileStore
    ranks: list[int] | None = None  # the global ranks this launcher forks
    store: str = ""                 # "host:port" of rank 0's TCPStore
    node: str = ""                  # the Ray node's name, said in the supervisor's report

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "LaunchRequest":
        return cls(**data)
