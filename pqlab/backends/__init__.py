"""One adapter module per Python library (``cryptography``, ``liboqs``, ``pycryptodome``, ``pqcrypto``,
``pure_python``, ``ascon``), each an :class:`~pqlab.backends.base.Algorithm` per algorithm registered with
:func:`~pqlab.backends.base.register`; :mod:`pqlab.backends.algorithms` finds them by name (``pqlab.get``,
``pqlab.names``) and loads the modules on first need.  A new backend is its module, its line in
``pqlab.core.vocabulary.BACKENDS`` and its package in ``environment.yml`` (CONTRIBUTING.md).
"""
