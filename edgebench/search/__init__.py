"""Adaptive search (`edgebench bench --search best|pareto`): the same answer as the full grid from a fraction of its
rows. space: the planned configurations as points with features; surrogate: a model of each metric over them;
goal: the current answer over the measured rows (answer.best / answer.pareto, exactly what `edgebench best` and
the report compute); decide: the next row to measure, or why to stop; records: predictions.csv and search.csv;
driver: the loop that measures through the ordinary sweep (pipeline.sweep), so a search row is a grid row.
"""
