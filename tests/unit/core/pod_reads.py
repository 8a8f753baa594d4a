"""A pod that records which of its fields are read: the dotted paths (``[]`` for a list's items)
of every key looked up, tested or iterated.  Used to check what the planner's rules read against
what they declare (core/pod_fields.py) and what kube/essentials.py keeps."""


def recorded(value, path, log):
    if isinstance(value, dict):
        return RecordedDict(value, path, log)
    if isinstance(value, list):
        return RecordedList(value, path, log)
    return value


def _join(path, key):
    return f"{path}.{key}" if path else str(key)


class RecordedDict(dict):
    def __init__(self, data, path, log):
        super().__init__(data)
        self._path, self._log = path, log

    def _read(self, key, value):
        where = _join(self._path, key)
        self._log.add(where)
        return recorded(value, where, self._log)

    def __getitem__(self, key):
        return self._read(key, super().__getitem__(key))

    def get(self, key, default=None):
        if key in self.keys():
            return self[key]
        self._log.add(_join(self._path, key))
        return default

    def __contains__(self, key):
        self._log.add(_join(self._path, key))
        return key in self.keys()

    def items(self):
        return [(k, self._read(k, v)) for k, v in super().items()]

    def values(self):
        return [v for _, v in self.items()]

    def __iter__(self):
        self._log.add(_join(self._path, "*"))    # its keys: as good as reading all of it
        return iter(list(self.keys()))


class RecordedList(list):
    def __init__(self, data, path, log):
        super().__init__(data)
        self._path, self._log = path, log

    def _items(self):
        return [recorded(v, self._path + "[]", self._log) for v in list.__iter__(self)]

    def __getitem__(self, index):
        item = super().__getitem__(index)
        return [recorded(v, self._path + "[]", self._log) for v in item] \
            if isinstance(index, slice) else recorded(item, self._path + "[]", self._log)

    def __iter__(self):
        self._log.add(self._path + "[]")
        return iter(self._items())

    def __add__(self, other):       # gpu._containers joins containers and initContainers
        self._log.add(self._path + "[]")
        return self._items() + list(other)

    def __radd__(self, other):
        self._log.add(self._path + "[]")
        return list(other) + self._items()
