//! The shape of the code (issue 37), checked on every test run: file and function lengths, no
//! import circles between a crate's files, the CLI kept thin, no crate holding most of the code,
//! and protocol names kept in their folders. Each rule is one `#[test]` that lists every offender
//! (path:line, what, how much); each checker has its own test on a small example that breaks it,
//! so a rule that passes is known to be able to fail.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};

#[path = "shape/imports.rs"]
mod imports;

use imports::import_circles;

/// Most lines in any `.rs` file under `crates/` (sources, tests, benchmarks, examples).
const MAX_FILE_LINES: usize = 900;
/// Most lines of any function, from the first line of its signature to its closing brace.
const MAX_FN_LINES: usize = 150;
/// Most lines of all of `crates/candor-cli/src` together, and of any one file in it.
const MAX_CLI_LINES: usize = 1_800;
const MAX_CLI_FILE_LINES: usize = 300;
const CLI_SRC: &str = "crates/candor-cli/src/";
/// The largest share of the workspace's source lines (`crates/*/src/**.rs`) one crate may hold.
const MAX_CRATE_SHARE_PERCENT: usize = 30;

/// Where protocol names may be written in `crates/*/src/**.rs`: each entry is (the
/// repository-relative path prefixes allowed, the names). A name ending in an identifier
/// character matches whole words only (`Scheme::Ws` is not found in `Scheme::Wss`); lines that
/// are only a comment are not searched.
const PROTOCOL_NAMES: &[(&[&str], &[&str])] = &[
    // The registry chooses a protocol; each protocol declares its own names in the results
    // (candor-core's protocol_name.rs gathers them at link time); the URL parser
    // (candor-wire's target.rs) knows the schemes. Nothing else names a protocol: the engine
    // asks the protocol's unit.
    (
        &[
            "crates/candor-protocols/src/http1/",
            "crates/candor-load/src/registry.rs",
            "crates/candor-core/src/",
        ],
        &["http1::Http1"],
    ),
    (
        &[
            "crates/candor-protocols/src/http2/",
            "crates/candor-load/src/registry.rs",
            "crates/candor-core/src/",
        ],
        &["http2::Http2"],
    ),
    (
        &[
            "crates/candor-protocols/src/tcp/",
            "crates/candor-load/src/registry.rs",
            "crates/candor-core/src/",
            "crates/candor-wire/src/target.rs",
        ],
        &["Scheme::Tcp", "tcp::Tcp"],
    ),
    (
        &[
            "crates/candor-protocols/src/ws/",
            "crates/candor-load/src/registry.rs",
            "crates/candor-core/src/",
            "crates/candor-wire/src/target.rs",
        ],
        &["Scheme::Ws", "Scheme::Wss", "ws::WebSocket"],
    ),
    // A protocol's names in the results are declared in its folder, nowhere else.
    (
        &["crates/candor-protocols/src/"],
        &["distributed_slice(candor_core::protocol_name::PROTOCOL_NAMES)"],
    ),
    (
        &[
            "crates/candor-protocols/src/http3/",
            "crates/candor-load/src/registry.rs",
        ],
        &["http3::Http3"],
    ),
    // Gone for good: the second enum of protocols, and HTTP/2 as a flag of the configuration.
    (&[], &["ProtocolKind", ".http2"]),
];

/// Repository-relative path (with `/`) to contents.
type Sources = BTreeMap<String, String>;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `crates/`, read once per test binary (the rules run in parallel).
fn sources() -> &'static Sources {
    static SOURCES: std::sync::OnceLock<Sources> = std::sync::OnceLock::new();
    SOURCES.get_or_init(|| {
        let root = repo_root();
        let mut out = Sources::new();
        collect_rs(&root, &root.join("crates"), &mut out);
        assert!(!out.is_empty(), "no .rs files under {}", root.display());
        out
    })
}

fn collect_rs(root: &Path, dir: &Path, out: &mut Sources) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            collect_rs(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).expect("under the root");
            let rel = rel.to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
            out.insert(rel, text);
        }
    }
}

fn line_count(text: &str) -> usize {
    text.lines().count()
}

/// `crates/<name>/src/...` -> `<name>`.
fn src_crate(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("crates/")?;
    let (name, rest) = rest.split_once('/')?;
    rest.starts_with("src/").then_some(name)
}

fn assert_none(rule: &str, offenders: Vec<String>) {
    assert!(
        offenders.is_empty(),
        "{rule}: {} offender(s)\n  {}",
        offenders.len(),
        offenders.join("\n  ")
    );
}

// ---------------------------------------------------------------------------------------------
// a. file length

fn long_files(sources: &Sources, max: usize) -> Vec<String> {
    sources
        .iter()
        .filter(|(_, text)| line_count(text) > max)
        .map(|(path, text)| format!("{path}:1 {} lines (max {max})", line_count(text)))
        .collect()
}

#[test]
fn no_file_is_over_900_lines() {
    assert_none(
        "files over 900 lines",
        long_files(sources(), MAX_FILE_LINES),
    );
}

#[test]
fn long_files_finds_a_901_line_file() {
    let sources = Sources::from([
        ("crates/a/src/lib.rs".into(), "x\n".repeat(900)),
        ("crates/a/src/big.rs".into(), "x\n".repeat(901)),
    ]);
    assert_eq!(
        long_files(&sources, 900),
        ["crates/a/src/big.rs:1 901 lines (max 900)"]
    );
}

// ---------------------------------------------------------------------------------------------
// b. function length

/// Every function longer than `max` lines in one file: free functions, methods, trait default
/// methods, tests and functions nested in others.
fn long_fns(path: &str, text: &str, max: usize) -> Vec<String> {
    let file = match syn::parse_file(text) {
        Ok(file) => file,
        Err(e) => return vec![format!("{path}:{} does not parse: {e}", line(e.span()))],
    };
    let mut finder = LongFns {
        path,
        max,
        owners: Vec::new(),
        found: Vec::new(),
    };
    finder.visit_file(&file);
    finder.found
}

fn line(span: Span) -> usize {
    span.start().line
}

struct LongFns<'a> {
    path: &'a str,
    max: usize,
    /// The types of the impls and traits the visit is in, to name methods `Type::method`.
    owners: Vec<String>,
    found: Vec<String>,
}

impl LongFns<'_> {
    fn check(&mut self, sig: &syn::Signature, block: &syn::Block) {
        let first = line(sig.span());
        let last = block.brace_token.span.close().end().line;
        let lines = last + 1 - first;
        if lines > self.max {
            let name = match self.owners.last() {
                Some(owner) => format!("{owner}::{}", sig.ident),
                None => sig.ident.to_string(),
            };
            self.found.push(format!(
                "{}:{first} fn {name}: {lines} lines (max {})",
                self.path, self.max
            ));
        }
    }
}

impl<'ast> Visit<'ast> for LongFns<'_> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.check(&f.sig, &f.block);
        visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.check(&f.sig, &f.block);
        visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.check(&f.sig, block);
        }
        visit::visit_trait_item_fn(self, f);
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let owner = match &*i.self_ty {
            syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        self.owners.push(owner.unwrap_or_else(|| "impl".into()));
        visit::visit_item_impl(self, i);
        self.owners.pop();
    }

    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        self.owners.push(t.ident.to_string());
        visit::visit_item_trait(self, t);
        self.owners.pop();
    }
}

#[test]
fn no_function_is_over_150_lines() {
    let offenders = sources()
        .iter()
        .flat_map(|(path, text)| long_fns(path, text, MAX_FN_LINES))
        .collect();
    assert_none("functions over 150 lines", offenders);
}

#[test]
fn long_fns_finds_each_kind_of_function() {
    let body = "    let _ = 1;\n".repeat(149);
    let text = format!(
        "fn free() {{\n{body}}}\n\
         fn short() {{\n{}}}\n\
         struct S;\n\
         impl S {{\n    fn method(&self) {{\n{body}    }}\n}}\n\
         trait T {{\n    fn default_method(&self) {{\n{body}    }}\n    fn required(&self);\n}}\n\
         fn outer() {{\n    fn inner() {{\n{body}    }}\n}}\n\
         #[test]\nfn a_test() {{\n{body}}}\n",
        "    let _ = 1;\n".repeat(148)
    );
    let found = long_fns("x.rs", &text, 150);
    let names: Vec<&str> = found
        .iter()
        .map(|f| f.split(" fn ").nth(1).unwrap().split(": ").next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "free",
            "S::method",
            "T::default_method",
            "outer",
            "inner",
            "a_test"
        ],
        "{found:#?}"
    );
    assert_eq!(found[0], "x.rs:1 fn free: 151 lines (max 150)");
}

// ---------------------------------------------------------------------------------------------
// c. no import circles between a crate's files (the checker and its own tests: shape/imports.rs)

#[test]
fn no_import_circle_between_files_of_a_crate() {
    assert_none("import circles", import_circles(sources()));
}

// ---------------------------------------------------------------------------------------------
// d. the CLI stays thin

fn fat_cli(sources: &Sources, dir: &str, max_total: usize, max_file: usize) -> Vec<String> {
    let files: Vec<(&String, usize)> = sources
        .iter()
        .filter(|(path, _)| path.starts_with(dir))
        .map(|(path, text)| (path, line_count(text)))
        .collect();
    let total: usize = files.iter().map(|(_, n)| n).sum();
    let mut found = Vec::new();
    if total > max_total {
        found.push(format!(
            "{dir}: {total} lines in {} files (max {max_total})",
            files.len()
        ));
    }
    for (path, n) in files {
        if n > max_file {
            found.push(format!("{path}:1 {n} lines (max {max_file})"));
        }
    }
    found
}

#[test]
fn candor_cli_src_is_at_most_1800_lines_and_300_per_file() {
    assert_none(
        "candor-cli/src too big",
        fat_cli(sources(), CLI_SRC, MAX_CLI_LINES, MAX_CLI_FILE_LINES),
    );
}

#[test]
fn fat_cli_finds_a_big_file_and_a_big_total() {
    let sources = Sources::from([
        ("crates/c/src/main.rs".into(), "x\n".repeat(300)),
        ("crates/c/src/cmd.rs".into(), "x\n".repeat(301)),
        ("crates/d/src/lib.rs".into(), "x\n".repeat(5000)),
    ]);
    assert_eq!(
        fat_cli(&sources, "crates/c/src/", 600, 300),
        [
            "crates/c/src/: 601 lines in 2 files (max 600)",
            "crates/c/src/cmd.rs:1 301 lines (max 300)"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// e. no crate holds most of the code

fn big_crates(sources: &Sources, max_percent: usize) -> Vec<String> {
    let mut per_crate: BTreeMap<&str, usize> = BTreeMap::new();
    for (path, text) in sources {
        if let Some(name) = src_crate(path) {
            *per_crate.entry(name).or_default() += line_count(text);
        }
    }
    let total: usize = per_crate.values().sum();
    per_crate
        .into_iter()
        .filter(|&(_, n)| n * 100 > total * max_percent)
        .map(|(name, n)| {
            format!(
                "crates/{name}/src: {n} of {total} source lines, {:.1}% (max {max_percent}%)",
                n as f64 * 100.0 / total as f64
            )
        })
        .collect()
}

#[test]
fn no_crate_holds_more_than_30_percent_of_the_source_lines() {
    assert_none(
        "crates too big",
        big_crates(sources(), MAX_CRATE_SHARE_PERCENT),
    );
}

#[test]
fn big_crates_finds_a_crate_over_its_share() {
    let sources = Sources::from([
        ("crates/a/src/lib.rs".into(), "x\n".repeat(31)),
        ("crates/b/src/lib.rs".into(), "x\n".repeat(30)),
        ("crates/c/src/lib.rs".into(), "x\n".repeat(30)),
        ("crates/d/src/lib.rs".into(), "x\n".repeat(9)),
        ("crates/a/tests/t.rs".into(), "x\n".repeat(1000)),
    ]);
    assert_eq!(
        big_crates(&sources, 30),
        ["crates/a/src: 31 of 100 source lines, 31.0% (max 30%)"]
    );
    assert!(big_crates(&sources, 31).is_empty());
}

// ---------------------------------------------------------------------------------------------
// f. protocol names stay in their folders

fn stray_names(sources: &Sources, rules: &[(&[&str], &[&str])]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in sources
        .iter()
        .filter(|(p, _)| src_crate(p).is_some() && !test_only(p))
    {
        for (allowed, names) in rules {
            if allowed.iter().any(|prefix| path.starts_with(prefix)) {
                continue;
            }
            for (number, text_line) in text.lines().enumerate() {
                if text_line.trim_start().starts_with("//") {
                    continue;
                }
                for name in names.iter().filter(|n| contains_name(text_line, n)) {
                    found.push(format!("{path}:{} {name}", number + 1));
                }
            }
        }
    }
    found
}

/// A file of tests beside the code (`tests.rs`, `*_tests.rs`, `testing.rs`, `sim.rs`, a `sim/`
/// folder): test code may name whatever it tests.
fn test_only(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.ends_with("tests.rs") || file == "testing.rs" || file == "sim.rs" || path.contains("/sim/")
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `name` in `line`, as a whole word at its end when it ends in an identifier character.
fn contains_name(line: &str, name: &str) -> bool {
    let whole_word = name.ends_with(is_ident_char);
    line.match_indices(name).any(|(at, _)| {
        !whole_word
            || !line[at + name.len()..]
                .chars()
                .next()
                .is_some_and(is_ident_char)
    })
}

#[test]
fn protocol_names_stay_in_their_folders() {
    assert_none(
        "protocol names outside their folders",
        stray_names(sources(), PROTOCOL_NAMES),
    );
}

#[test]
fn stray_names_finds_a_name_outside_its_folder() {
    let sources: Sources = [
        ("crates/l/src/protocol/ws.rs", "Scheme::Ws => 1,\n"),
        (
            "crates/l/src/run.rs",
            "// Scheme::Ws in a comment\nlet h = c.http2;\nmatch s { Scheme::Wss => 1, Scheme::Ws => 2 }\nc.http2_window\n",
        ),
        ("crates/l/tests/t.rs", "Scheme::Ws\n"),
    ]
    .map(|(p, t)| (p.to_string(), t.to_string()))
    .into();
    let rules: &[(&[&str], &[&str])] = &[(
        &["crates/l/src/protocol/"],
        &["Scheme::Ws", "Scheme::Wss", ".http2"],
    )];
    assert_eq!(
        stray_names(&sources, rules),
        [
            "crates/l/src/run.rs:2 .http2",
            "crates/l/src/run.rs:3 Scheme::Ws",
            "crates/l/src/run.rs:3 Scheme::Wss"
        ]
    );
}
