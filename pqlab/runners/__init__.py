"""The programs pqlab runs outside its own process, and pqlab's own processes that measure.

Every external program is one record of :mod:`pqlab.runners.program` (its folder under ``native/`` with a
``program.toml`` and one line in ``REGISTRY``), speaks one protocol (``native/PROTOCOL.md``: ``list``,
``time``, ``serve``, ``screen``, ``handshake``; one JSON document; exit 2 for a bad request), is built on
first need with a build record, and times through one round loop (:func:`pqlab.runners.base.in_rounds`). The
runners that read it: :mod:`~pqlab.runners.native` (the C runner, liboqs without Python),
:mod:`~pqlab.runners.jvm` (Bouncy Castle for notebook 01, one fresh JVM per algorithm),
:mod:`~pqlab.runners.tls` (the TLS 1.3 runner, with :mod:`~pqlab.runners.tls_certificates` and
:mod:`~pqlab.runners.tls_messages`), :mod:`~pqlab.runners.impls` (notebook 08's programs) and
:mod:`~pqlab.runners.leakage` (notebook 09's screens). Each checks what a caller asks for before anything runs
(:mod:`pqlab.core.inputs`) and records with :class:`pqlab.store.recorder.RunRecorder`. pqlab's own processes:
a round of :mod:`pqlab.runners.rounds`, a liboqs build's worker, a memory worker
(:mod:`pqlab.runners.memory`), energy windows (:mod:`pqlab.runners.energy`) and the fidelity check
(:mod:`pqlab.runners.fidelity`); PROTOCOL.md says why those measure outside the protocol.
"""
