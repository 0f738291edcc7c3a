"""--metrics [HOST:]PORT: serve the aggregations and the per-probe
statistics to Prometheus while tracing (CONTRACT.md "Metrics for
Prometheus"). Every scrape reads the kernel maps at that moment
(runtime/aggregations.py); render/metrics.py makes them metric families;
prometheus_client's HTTP server (a thread per scrape) writes the exposition.

Why scrapes need no lock against the event loop: a map read is a bpf(2)
call on the map's fd (runtime/bpfmaps.py), which the kernel makes safe
against the probes and against the loop's own reads. What they must not
race is the end of the trace, which closes those fds (and the kernel may
give the numbers to other files): `stop()` waits for a scrape under way,
and scrapes after it serve nothing.
"""
from __future__ import annotations

import socket
import threading
from typing import Callable

from prometheus_client import CollectorRegistry, start_http_server

from gs_cgen.errors import GsError, RuntimeTraceError
from gs_cgen.render.metrics import metric_families
from gs_cgen.runtime.aggregations import read_aggregations, read_probe_stats


class MetricsServer:
    """A prometheus_client custom collector over one live session, and the
    HTTP server that serves it. `start()` after the session is loaded (its
    maps exist) and before the probes are attached; `stop()` before the
    session is closed."""

    def __init__(self, session, host: str, port: int,
                 notes: Callable[[str], None] = lambda _: None) -> None:
        self.session, self.host, self.port, self.notes = session, host, port, notes
        self.reading = threading.Lock()
        self.stopped = False
        self.server = self.thread = None
        self.failed = False

    def start(self) -> str:
        """Listen; the URL served. A port taken or a host that is not ours
        is a user error, before any probe is attached."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)
        try:
            self.server, self.thread = start_http_server(self.port, self.host, registry)
        except OSError as exc:
            raise RuntimeTraceError(f"--metrics: cannot serve on {self.host}:{self.port}: "
                                    f"{exc.strerror or exc}",
                                    hints=("choose another port, or a host address of this "
                                           "machine",)) from None
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.server.server_port}/metrics"

    def collect(self):
        """prometheus_client's Collector protocol: called once per scrape,
        on the server's thread for that scrape."""
        with self.reading:
            if self.stopped:
                return []
            try:
                snapshots = read_aggregations(self.session, self.session.plan.aggregations)
                return metric_families(snapshots, read_probe_stats(self.session))
            except GsError as exc:
                # Said once, on stderr; the scrape gets an empty page, not a traceback.
                if not self.failed:
                    self.failed = True
                    self.notes(f"--metrics: a scrape could not read the maps: {exc.message}")
                return []

    def stop(self) -> None:
        """Let a scrape under way finish; later ones (their thread may still
        be running) serve nothing. Then stop listening."""
        with self.reading:
            self.stopped = True
        if self.server is None:
            return
        server, self.server = self.server, None
        stopper = threading.Thread(target=server.shutdown)
        stopper.start()
        # The server looks for shutdown() every 0.5 s (serve_forever's
        # poll); a connection wakes it at once, not half a second later.
        while stopper.is_alive():
            _connect(server.server_address)
            stopper.join(0.02)
        server.server_close()


def _connect(address) -> None:
    try:
        with socket.create_connection(address[:2], timeout=0.1):
            pass
    except OSError:
        pass            # it has stopped listening: what the poke was for
