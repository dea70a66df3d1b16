"""Operations: embedded stack, migrations, topics, the CLI, replay and benchmarks."""
