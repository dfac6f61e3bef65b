"""The word lists of the fact probes (core/facts.py): the units a number fact is read with (and
normalized to), the stop words left out of a statement's terms, and the extensions and names that
make a path a file. Pure data."""

# A number's unit as written (lowercase) -> the unit its key says.
NUMBER_UNITS = {
    "ms": "ms", "millisecond": "ms", "milliseconds": "ms",
    "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
    "m": "min", "min": "min", "mins": "min", "minute": "min", "minutes": "min",
    "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
    "day": "day", "days": "day",
    "b": "B", "byte": "B", "bytes": "B", "kb": "KB", "kib": "KB", "mb": "MB", "mib": "MB", "gb": "GB", "gib": "GB", "tb": "TB",
    "k": "k", "%": "%", "percent": "%",
    "token": "tokens", "tokens": "tokens", "line": "lines", "lines": "lines", "file": "files", "files": "files",
    "test": "tests", "tests": "tests", "passed": "passed", "failed": "failed", "errors": "errors", "error": "errors",
    "row": "rows", "rows": "rows", "item": "items", "items": "items", "char": "chars", "chars": "chars",
    "characters": "chars", "px": "px", "rps": "rps", "qps": "qps", "x": "x", "times": "x", "usd": "USD", "$": "USD",
    "commits": "commits", "commit": "commits", "requests": "requests", "users": "users", "records": "records",
    "words": "words", "pages": "pages", "kbps": "kbps", "mbps": "mbps", "ghz": "GHz", "mhz": "MHz",
}

# Words a statement's terms leave out: a summary need not repeat them.
STOP_WORDS = set(
    """a an the and or but if then so to of in on at by for with from into onto as is are was were be been being
    it its this that these those i we you he she they me us my our your their them there here what which who whom
    do does did done doing have has had having will would shall should can could may might must not no yes
    let lets let's ll ve re just also very really now then than too more most some any all each every both
    about above after again against before below between during over under up down out off through while
    because until when where why how only own same such nothing other few further once
    use using used try trying going go instead rather make sure keep always never don't dont do decided
    i'll we'll it's that's okay ok please
    implement implementing create update fix replace change changes add remove check run read write look see need
    first next following pieces piece solution approach order call thing things work now start file files""".split()
)

# Extensions that make a path a file (facts.is_file_like).
FILE_EXTS = set(
    """py pyi pyx js mjs cjs ts tsx jsx md mdx rst txt json jsonl yaml yml toml ini cfg conf env lock ex exs heex eex
    erl hrl rb go rs java kt kts scala c h cc cpp hpp cs fs sh bash zsh fish ps1 bat html htm css scss sass less sql
    xml csv tsv log ipynb vue svelte php swift m mm dart lua pl r jl zig proto tf tfvars hcl gradle mk cmake nix
    dockerfile pdf png jpg jpeg gif svg webp ico mp4 wav zip gz tgz tar whl so dylib dll exe wasm db sqlite sqlite3
    pem crt key pub service plist patch diff out err bak tmp ml mli hs elm clj cljs edn graphql gql prisma sol""".split()
)

# Files known by name, without an extension.
FILE_NAMES = set(
    """makefile gnumakefile dockerfile containerfile readme license licence copying notice authors changelog
    gemfile rakefile procfile vagrantfile jenkinsfile brewfile pipfile podfile justfile caddyfile codeowners
    .gitignore .gitattributes .gitmodules .dockerignore .env .envrc .editorconfig .npmrc .nvmrc .yarnrc
    .bashrc .zshrc .profile .bash_profile .prettierrc .eslintrc .babelrc .pylintrc .flake8 .coveragerc
    .dialyzerignore .tool-versions .python-version .ruby-version .node-version .htaccess""".split()
)
