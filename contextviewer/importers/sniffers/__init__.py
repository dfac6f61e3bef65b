"""Each format's light entry (``ENTRY = Entry(...)``): its name, label, storage, where its logs
are, the file endings it reads, and its ``sniff`` with the few constants it needs. Discovery
imports these only: a format's parser module is imported when the format claims a path
(formats.py). A module here imports nothing heavy: no format module, only the shared helpers
(``common``, ``lines``, ``jsondoc``, ``sqlite_db``, ``*_layout``), the sniff a few formats share
(``charm_store``: Crush and Go-era opencode) and the standard library."""
