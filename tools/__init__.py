"""Developer tooling: the local LiveKit server, the demo, the backtest."""
