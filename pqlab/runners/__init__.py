"""The programs pqlab runs outside its own process, each in one module, all through :mod:`pqlab.runners.base`.

- :mod:`~pqlab.runners.native`: the C runner ``native/bench/pqbench`` (liboqs without Python, cycles from C);
- :mod:`~pqlab.runners.jvm`: the Bouncy Castle runner ``native/bc-runner`` (Java, one fresh JVM per
  algorithm);
- :mod:`~pqlab.runners.tls`: the TLS 1.3 runner ``native/tls-runner`` (OpenSSL 3.6 in Rust, checked
  handshakes), with its certificate chains in :mod:`~pqlab.runners.tls_certificates` and the records it
  reports in :mod:`~pqlab.runners.tls_messages`.

Each builds its program on first use, checks what a caller asks for before anything runs
(:mod:`pqlab.core.inputs`), runs it through :func:`~pqlab.runners.base.call_json` (one document on stdout; a
timeout, a crash or output that is not JSON becomes one error naming the command and what the program said),
and records what it measured with :class:`pqlab.store.recorder.RunRecorder`, returning a
:class:`pqlab.store.results.Run`.  The other processes pqlab starts are its own Python: a round of
:mod:`pqlab.runners.rounds`, a liboqs build's worker (:func:`pqlab.benchmark.bench_in_worker`) and a memory
worker (:mod:`pqlab.runners.memory.worker`).  Energy (:mod:`pqlab.runners.energy`) is measured from a power
source (:mod:`pqlab.runners.power_sources`) over traces (:mod:`pqlab.runners.power_traces`).
"""
