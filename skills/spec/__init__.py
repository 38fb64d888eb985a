"""What a skill is, and how a registration becomes one: the model, the normalizer, its fields and limits."""
