"""The shared shape of the text datasets: a long id sequence read as overlapping next-token windows."""
from __future__ import annotations

import ember
from ember.utils.data import Dataset


class TokenWindows(Dataset):
    """Sample i is ``(x, y)``: x = ids [i, i + block_size) and y the same window shifted by one, as int64
    tensors. Subclasses set ``self._ids`` (a NumPy int64 array) and ``self.block_size``."""

    def __len__(self) -> int:
        return max(0, len(self._ids) - self.block_size)

    def __getitem__(self, index: int):
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"{type(self).__name__}: index {index} out of range for {len(self)} samples")
        chunk = self._ids[index:index + self.block_size + 1]
        return ember.from_numpy(chunk[:-1].copy()), ember.from_numpy(chunk[1:].copy())
