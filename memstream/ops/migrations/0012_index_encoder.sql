-- Which encoder produced the vectors of the live index. Vectors of different encoders are not
-- comparable (int8 ONNX vs fp32: cosine 0.96-0.99 for the same text), so a worker whose encoder
-- gives other vectors than the index holds refuses to start, and `replay --index` re-indexes
-- every tenant and records the new encoder. One row: the index is one per deployment. No row
-- on an index built before this record existed: the worker records its own encoder if it gives
-- fp32 vectors (what every earlier worker wrote), and refuses otherwise.
CREATE TABLE index_encoder (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    model text NOT NULL,          -- model directory name and sha256 prefix of its files
    vectors text NOT NULL,        -- fp32 (onnx, torch, eager: the same vectors) or int8
    dimension integer NOT NULL,
    encoder text NOT NULL,        -- the encoder that recorded it (onnx, onnx-int8, torch, eager)
    recorded_at timestamptz NOT NULL DEFAULT now()
);
