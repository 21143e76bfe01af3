"""skill: load a SKILL.md playbook into the conversation (reference §6.14).

Skills are discovered on every catalogue build and call, so a skill dropped into
a folder is visible without a restart.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tools.arguments.model import Arguments
from tools.config.dirs import global_config_dir, project_ancestors
from tools.context import ToolContext
from tools.errors import NotFoundError
from tools.result import ToolResult
from tools.tool import Annotations, Caller, define

if TYPE_CHECKING:
    from tools.context import Host

log = logging.getLogger("toolhost.skill")

SAMPLED_FILES = 10


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    directory: Path
    body: str


def skill_roots(directory: Path, worktree: Path) -> list[Path]:
    """Folders whose subfolders may hold a SKILL.md, nearest first."""
    roots: list[Path] = []
    for base in project_ancestors(directory, worktree):
        roots += [base / ".opencode" / "skill", base / ".opencode" / "skills"]
        roots.append(base / ".claude" / "skills")
    config = global_config_dir()
    roots += [config / "skill", config / "skills", Path.home() / ".claude" / "skills"]
    return roots


def parse_skill(path: Path) -> Skill:
    """Read front matter (``name``, ``description``) and body; raise ValueError if malformed."""
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---"):
        raise ValueError("no YAML front matter (the file must start with ---)")
    try:
        _, front, body = text.split("---", 2)
    except ValueError:
        raise ValueError("front matter is not closed by a second ---") from None
    import yaml  # only when a SKILL.md exists: PyYAML stays out of `toolhost list`

    try:
        meta = yaml.safe_load(front)
    except yaml.YAMLError as error:
        raise ValueError(f"front matter is not valid YAML: {error}") from None
    if not isinstance(meta, dict):
        raise ValueError("front matter is not a mapping")
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not name.strip():
        raise ValueError("front matter has no name")
    if not isinstance(description, str):
        raise ValueError("front matter has no description")
    return Skill(name.strip(), description.strip(), path.parent, body.strip())


def discover(directory: Path, worktree: Path) -> dict[str, Skill]:
    """Every valid skill by name; the nearest definition of a name wins."""
    found: dict[str, Skill] = {}
    for root in skill_roots(directory, worktree):
        if not root.is_dir():
            continue
        for skill_file in sorted(root.glob("*/SKILL.md")):
            try:
                skill = parse_skill(skill_file)
            except (OSError, ValueError) as error:
                log.warning("skipping skill %s: %s", skill_file, error)
                continue
            found.setdefault(skill.name, skill)
    return dict(sorted(found.items()))


def sample_files(directory: Path, limit: int = SAMPLED_FILES) -> list[Path]:
    files: list[Path] = []
    for root, dirs, names in os.walk(directory):
        dirs.sort()
        for name in sorted(names):
            path = Path(root) / name
            if path.name == "SKILL.md" and path.parent == directory:
                continue
            files.append(path)
            if len(files) >= limit:
                return files
    return files


@dataclass(frozen=True, kw_only=True)
class SkillParams(Arguments):
    name: str
    """The name of the skill to load, as listed in this description"""


async def execute(args: SkillParams, ctx: ToolContext) -> ToolResult:
    skills = await ctx.run_blocking(discover, ctx.directory, ctx.worktree)
    skill = skills.get(args.name)
    if skill is None:
        available = ", ".join(skills) or "none"
        raise NotFoundError(f'Skill "{args.name}" not found. Available skills: {available}')
    await ctx.ask("skill", [skill.name], [skill.name])
    files = await ctx.run_blocking(sample_files, skill.directory)
    listing = "\n".join(f"<file>{path}</file>" for path in files)
    output = "\n".join(
        [
            f'<skill_content name="{skill.name}">',
            f"# Skill: {skill.name}",
            "",
            skill.body,
            "",
            f"Base directory for this skill: {skill.directory.as_uri()}",
            "Relative paths in this skill (e.g., scripts/, reference/) are relative to this "
            "base directory.",
            "Note: file list is sampled.",
            "",
            "<skill_files>",
            *([listing] if listing else []),
            "</skill_files>",
            "</skill_content>",
        ]
    )
    return ToolResult(
        title=f"Loaded skill: {skill.name}",
        output=output,
        metadata={"name": skill.name, "dir": str(skill.directory)},
    )


def describe(base: str, host: Host, caller: Caller) -> str:
    """The description with the skills available in this worktree appended."""
    skills = discover(host.directory, host.worktree)
    if not skills:
        return f"{base}\n\nNo skills are installed in this project."
    listing = "\n".join(f"- **{s.name}**: {s.description}" for s in skills.values())
    return f"{base}\n\nAvailable skills:\n{listing}"


tool = define(
    "skill",
    parameters=SkillParams,
    execute=execute,
    kind="read",
    annotations=Annotations(read_only=True, idempotent=True),
    describe=describe,
)
