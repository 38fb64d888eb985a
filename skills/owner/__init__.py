"""The owner's word: what each field can reach, approvals, and standing grants."""
