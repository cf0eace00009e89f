"""The choice: the pure policy, the gathering of its inputs (choose), memory admission."""
