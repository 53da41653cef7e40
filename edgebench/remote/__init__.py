"""`edgebench remote`: run sweeps on Jetson boards over ssh (see command.py; agent.py runs on the board)."""
