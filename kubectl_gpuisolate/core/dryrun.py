"""``DryRun``: whether a command writes, has the API server check its writes
(``dryRun=All``), or only reports them.  One value, chosen by the --dry-run flag
(flags.py) and passed down to every write (kube/api.py), which is the only place
that turns it into a request; so it lives here, below both.
"""

import enum


class DryRun(enum.Enum):
    NONE = "none"
    CLIENT = "client"
    SERVER = "server"

    @property
    def suffix(self) -> str:
        return {"none": "", "client": " (dry run)", "server": " (server dry run)"}[self.value]
