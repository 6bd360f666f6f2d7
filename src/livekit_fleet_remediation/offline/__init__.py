"""What the console commands run off AWS: exported logs read back, Logs Insights answered over them,
the backtest's alarm evaluation and the replay's simulated world. Shipped with the package (the
commands need it after ``pip install``); nothing here is ever deployed to Lambda."""
