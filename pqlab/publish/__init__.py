"""What leaves pqlab for a reader: the run context a notebook prints (:mod:`~pqlab.publish.context`), figures
(:mod:`~pqlab.publish.plotting`, laid out by :mod:`~pqlab.publish.figure_layout`), tables and numbers
exported with their provenance (:mod:`~pqlab.publish.export`, with ``pqlabtables.sty``;
:mod:`~pqlab.publish.export_numbers`, :mod:`~pqlab.publish.export_records`), the paper built from them
(:mod:`~pqlab.publish.paper`), the HTML report of a reproduce (:mod:`~pqlab.publish.report`, reading
:mod:`~pqlab.publish.report_notebooks`) and its durations (:mod:`~pqlab.publish.durations`).  Every number,
version and machine fact in them is generated from the data.
"""
