"""Small constructs, one job each: storage, secrets, stage queues, functions, API."""
