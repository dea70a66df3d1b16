-- `memstream dlq redrive` publishes a dead letter's original bytes again and stamps it here, so
-- that `dlq list` tells what was already sent through again and `redrive --all` skips it.
ALTER TABLE dead_letters ADD COLUMN redriven_at timestamptz;
