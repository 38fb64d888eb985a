"""Installing SKILL.md skills into the user folder: `skills install`, `uninstall`.

A source is a local folder, a ``.tar``/``.tar.gz``/``.tgz``/``.zip`` archive, or a git
repository (a URL, or a local repository with ``ref``), with an optional sub-path. It holds one
skill (a folder with a ``SKILL.md``) or a folder of skills.

Nothing from the source is ever executed, and nothing reaches the user folder unless it passed:

1. the source is read into a hidden staging folder inside the user folder (so the last step is
   a rename on one file system); an archive's members are checked from its index *before*
   anything is unpacked: no absolute path or ``..``, no link leading out, no device, FIFO or
   socket, sizes and counts under the limits of :mod:`skills.spec.limits`; a folder is walked without
   following links, with the same rules; a git repository is cloned with hooks off
   (``core.hooksPath=/dev/null``), no submodules and no prompt, then exported with ``git archive``
   and checked as an archive; on every route (an MCP server's too), a control entry
   (:func:`adapters.folders.control_part`: ``.git``, ``.envrc``...) is left out, and a source that
   still carries what git would take for a repository (:func:`adapters.folders.repositories`: a folder
   holding ``HEAD``, ``objects`` and ``refs``, whatever its name; a ``gitdir:`` file) is refused;
2. every skill is validated as ``skills validate`` does (the Agent Skills specification, strictly),
   plus its ``depends`` (against the skills installed and those that pass with it), and a name
   taken in the user folder is refused unless ``force``;
3. each skill that passed gets an ``.install.json`` (where it came from) and is renamed into place.

A problem of step 1 refuses the whole source (:class:`InstallRefusedError`, naming every reason, an
archive's problems the first ten and then how many more). In step 2 each skill stands alone: the others
install and the refused ones are named with their reasons in :attr:`InstallResult.refused`, unless
``all_or_nothing`` (or none passed), which refuses the source. The staging folder goes either way.
"""

from adapters.installer.installing import install, source_kind, uninstall
from adapters.installer.records import (
    RECORD,
    InstalledSkill,
    InstallLimits,
    InstallRecord,
    InstallResult,
    RefusedSkill,
    UninstallResult,
    describe_record,
    read_record,
)

__all__ = [
    "RECORD",
    "InstallLimits",
    "InstallRecord",
    "InstallResult",
    "InstalledSkill",
    "RefusedSkill",
    "UninstallResult",
    "describe_record",
    "install",
    "read_record",
    "source_kind",
    "uninstall",
]
