"""The commands: ``python -m pqlab`` (:mod:`~pqlab.app.cli`), the environment ``make setup`` provisions
(liboqs builds, helpers, LaTeX, a browser: :mod:`~pqlab.app.provision`) and JupyterLab started on it
(:mod:`~pqlab.app.lab`).  The top floor: nothing imports it but ``pqlab.__main__``.
"""
