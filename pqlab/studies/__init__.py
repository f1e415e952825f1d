"""One module per notebook: that notebook's tables, figures, generated text and quoted numbers.

=====================  ==========================================================================
module                 notebook
=====================  ==========================================================================
``aes_rsa_sphincs``    01: AES-256, RSA-2048 and SPHINCS+ per operation (study 000, Bouncy Castle)
``message_scaling``    02: how signing cost grows with the message (study 001)
``memory_footprint``   03: heap and stack of one operation (study 002, Gravity-SPHINCS)
``signature_cycles``   04: cycle tables of signature families (study 003, NIST round 2)
``round2_study``       04, the study's side: its numbers recomputed, today's heirs of its parameter sets
``energy_pi4``         05: energy per operation (study 004, Raspberry Pi 4 + INA219); the study's own
                       table checked in ``energy_pi4_published``, the figures in ``energy_pi4_figures``
``tls_handshake``      06: what post-quantum costs a real TLS 1.3 handshake (OpenSSL 3.6, budget model)
``atlas``              07: the atlas across machines (merged bundles, the Pi 4 study, pqm4's Cortex-M4)
=====================  ==========================================================================

A study imports the core (``pqlab.*``); the core never imports a study (``tests/test_layout.py``).
"""
