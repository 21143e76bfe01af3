"""How many leading tokens name a command, for bash "always allow" patterns (§3.5).

``git checkout main`` is the command ``git checkout``; ``npm run dev x`` is
``npm run dev``. Approving "always" for a call stores ``<prefix> *``, so the
approval covers that command with any arguments but not its siblings
(approving ``git checkout *`` does not approve ``git push``).

The table is OpenCode's (``permission/arity.ts``), entry for entry. A longer key
only appears where its arity differs from what its shorter key implies.
"""

from __future__ import annotations

from collections.abc import Sequence


def _each(names: str, arity: int) -> dict[str, int]:
    return dict.fromkeys(names.split(), arity)


ARITY: dict[str, int] = {
    # arity 1: the program name alone is the command
    **_each(
        (
            "cat cd chmod chown cp echo env export grep ionice kill killall ln ls mkdir mv nice "
            "nohup ps pwd rm rmdir sleep source stdbuf sudo tail time timeout touch unset watch "
            "which xargs"
        ),
        1,
    ),
    # arity 2: program + subcommand (git checkout, npm install, docker run)
    **_each(
        (
            "bazel brew bun cargo cdk cf cmake composer consul crictl deno docker eksctl firebase "
            "flyctl git go gradle helm heroku hugo ip kind kubectl kustomize make mc minikube "
            "mongosh mysql mvn ng npm nvm nx openssl pip pipenv pnpm poetry podman psql pulumi "
            "pyenv python rake rbenv redis-cli rustup serverless skaffold sls sst swift systemctl "
            "terraform tmux turbo ufw vault vercel volta wp yarn"
        ),
        2,
    ),
    # arity 3: CLIs whose commands are two words deep (aws s3 ls, gh pr list) ...
    **_each("aws az doctl gcloud gh sfdx", 3),
    # ... and subcommands that take a further name (npm run dev, docker compose up)
    **dict.fromkeys(
        [
            "bun run",
            "bun x",
            "cargo add",
            "cargo run",
            "consul kv",
            "deno task",
            "docker builder",
            "docker compose",
            "docker container",
            "docker image",
            "docker network",
            "docker volume",
            "eksctl create",
            "git config",
            "git remote",
            "git stash",
            "ip addr",
            "ip link",
            "ip netns",
            "ip route",
            "kind create",
            "kubectl kustomize",
            "kubectl rollout",
            "mc admin",
            "npm exec",
            "npm init",
            "npm run",
            "npm view",
            "openssl req",
            "openssl x509",
            "pnpm dlx",
            "pnpm exec",
            "pnpm run",
            "podman container",
            "podman image",
            "pulumi stack",
            "terraform workspace",
            "vault auth",
            "vault kv",
            "yarn dlx",
            "yarn run",
        ],
        3,
    ),
}


def prefix(tokens: Sequence[str]) -> list[str]:
    """The tokens that name the command: the longest table key decides how many.

    No key matches → the first token alone; no tokens → nothing.
    """
    for length in range(len(tokens), 0, -1):
        arity = ARITY.get(" ".join(tokens[:length]))
        if arity is not None:
            return list(tokens[:arity])
    return list(tokens[:1])
