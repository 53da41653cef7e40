"""The decision layer: rows grouped into configurations, limits checked on every repeat, intervals with the
coverage they really have, the best under limits and the Pareto front. report/ renders what it decides and
search/ steers by it; it renders nothing and imports neither."""
