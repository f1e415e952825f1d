"""One study per notebook: that notebook's measurements, tables, figures, generated text and quoted numbers.

A study that grew is a package, split by concern (``measure``, ``tables``, ``figures``, ``prose``,
``published`` for the seed study's own numbers); its ``__init__`` names what the notebook calls.

=====================  ==========================================================================
study                  notebook
=====================  ==========================================================================
``aes_rsa_sphincs``    01: AES-256, RSA-2048 and SPHINCS+ per operation (study 000, Bouncy Castle)
``message_scaling``    02: how signing cost grows with the message (study 001)
``memory_footprint``   03: heap and stack of one operation (study 002, Gravity-SPHINCS)
``signature_cycles``   04: cycle tables of signature families (study 003, NIST round 2)
``round2_study``       04, the study's side: its numbers recomputed, today's heirs of its parameter sets
``liboqs_releases``    04: what changes between liboqs releases
``energy_pi4``         05: energy per operation (study 004, Raspberry Pi 4 + INA219)
``tls_handshake``      06: what post-quantum costs a real TLS 1.3 handshake (OpenSSL 3.6, budget model)
``atlas``              07: the atlas across machines (merged bundles, the Pi 4 study, pqm4's Cortex-M4)
``implementations``    08: every implementation in its own language (notebook 08's programs)
``timing_leakage``     09: does it leak? the timing screen and valgrind taint
``conforming``         01–07: the conformance caveats and the price of a missing check
=====================  ==========================================================================

A study imports every layer below it; nothing below imports a study (``tests/test_layout.py``).
"""
