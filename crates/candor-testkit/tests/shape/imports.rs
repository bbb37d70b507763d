//! Import circles between the files of a crate target: its module tree read from `mod`
//! declarations, every path its files name resolved to the file it leads into (through `use`
//! re-exports to the file that defines the item), and the strongly connected components of that
//! graph. Code under `#[cfg(test)]` is skipped: unit tests beside their code use their parent.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::spanned::Spanned;
use syn::visit::{self, Visit};

/// Repository-relative path (with `/`) to contents.
type Sources = BTreeMap<String, String>;

fn line(span: Span) -> usize {
    span.start().line
}

/// Every circle of imports between the files of each crate target (library, binary): each
/// strongly connected component of more than one file, with one reference per edge inside it.
pub fn import_circles(sources: &Sources) -> Vec<String> {
    let mut found = Vec::new();
    for root in crate_roots(sources) {
        let tree = ModuleTree::load(sources, &root);
        let graph = tree.file_graph();
        for component in strongly_connected(tree.files.len(), &graph) {
            if component.len() < 2 {
                continue;
            }
            let members: BTreeSet<usize> = component.iter().copied().collect();
            let mut text = format!(
                "circle of {} files in {root}: {}",
                members.len(),
                members
                    .iter()
                    .map(|&f| tree.files[f].as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            for (&(from, to), (line, path)) in &graph {
                if members.contains(&from) && members.contains(&to) {
                    let _ = write!(
                        text,
                        "\n      {}:{line} -> {} ({path})",
                        tree.files[from], tree.files[to]
                    );
                }
            }
            found.push(text);
        }
    }
    found
}

/// Each crate target's root file: `src/lib.rs`, `src/main.rs`, `src/bin/*.rs`,
/// `src/bin/*/main.rs`.
fn crate_roots(sources: &Sources) -> Vec<String> {
    sources
        .keys()
        .filter(|path| {
            let Some(rest) = path
                .strip_prefix("crates/")
                .and_then(|r| r.split_once('/'))
                .map(|(_, r)| r)
            else {
                return false;
            };
            matches!(rest, "src/lib.rs" | "src/main.rs")
                || rest
                    .strip_prefix("src/bin/")
                    .is_some_and(|b| !b.contains('/') || b.ends_with("/main.rs"))
        })
        .cloned()
        .collect()
}

/// One module of a crate target.
#[derive(Default)]
struct Module {
    /// Index into `ModuleTree::files`: the file its items are written in.
    file: usize,
    children: BTreeSet<String>,
    /// Names brought in by `use` (renamed or not) -> the path as written.
    aliases: BTreeMap<String, Vec<String>>,
}

/// A path named in a file, to be resolved once every module is known.
struct Reference {
    file: usize,
    module: Vec<String>,
    path: Vec<String>,
    line: usize,
}

struct ModuleTree {
    files: Vec<String>,
    modules: BTreeMap<Vec<String>, Module>,
    references: Vec<Reference>,
}

impl ModuleTree {
    /// The modules reached from `root` through `mod` declarations, except `#[cfg(test)]` ones.
    fn load(sources: &Sources, root: &str) -> ModuleTree {
        let mut tree = ModuleTree {
            files: Vec::new(),
            modules: BTreeMap::new(),
            references: Vec::new(),
        };
        let dir = parent_dir(root);
        tree.load_file(sources, root, Vec::new(), dir);
        tree
    }

    /// Reads one file as module `module`; its `mod x;` files are found under `dir`.
    fn load_file(&mut self, sources: &Sources, path: &str, module: Vec<String>, dir: String) {
        let Some(text) = sources.get(path) else {
            return;
        };
        let Ok(file) = syn::parse_file(text) else {
            return;
        };
        let index = self.files.len();
        self.files.push(path.to_string());
        self.modules.entry(module.clone()).or_default().file = index;
        let mut reader = FileReader {
            file: index,
            path_dir: parent_dir(path),
            module,
            dir,
            declared: Vec::new(),
            sources,
            tree: self,
        };
        reader.visit_file(&file);
        for (child_path, child_module, child_dir) in std::mem::take(&mut reader.declared) {
            self.load_file(sources, &child_path, child_module, child_dir);
        }
    }

    /// Edges between files (from, to) -> the first reference that makes each: (line, path).
    fn file_graph(&self) -> BTreeMap<(usize, usize), (usize, String)> {
        let mut graph = BTreeMap::new();
        for r in &self.references {
            if let Some(to) = self.resolve(&r.module, &r.path, 0) {
                if to != r.file {
                    graph
                        .entry((r.file, to))
                        .or_insert_with(|| (r.line, r.path.join("::")));
                }
            }
        }
        graph
    }

    /// The file a path named in `module` leads into, if it leads into this crate target.
    fn resolve(&self, module: &[String], path: &[String], depth: usize) -> Option<usize> {
        let (first, rest) = path.split_first()?;
        if depth > 8 {
            return None;
        }
        let current = self.modules.get(module)?;
        let mut base = module.to_vec();
        let rest = match first.as_str() {
            "crate" => {
                base.clear();
                rest
            }
            "self" => rest,
            "super" => {
                base.pop()?;
                let mut rest = rest;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
                rest
            }
            name if current.children.contains(name) => {
                base.push(name.to_string());
                rest
            }
            name => {
                let alias = current.aliases.get(name)?;
                let whole: Vec<String> = alias.iter().chain(rest).cloned().collect();
                return self.resolve(module, &whole, depth + 1);
            }
        };
        for (i, segment) in rest.iter().enumerate() {
            let here = self.modules.get(&base)?;
            if here.children.contains(segment) {
                base.push(segment.clone());
            } else if let Some(alias) = here.aliases.get(segment) {
                let whole: Vec<String> = alias.iter().chain(&rest[i + 1..]).cloned().collect();
                return self.resolve(&base, &whole, depth + 1);
            } else {
                break;
            }
        }
        self.modules.get(&base).map(|m| m.file)
    }
}

fn parent_dir(path: &str) -> String {
    path.rsplit_once('/')
        .map(|(dir, _)| dir.to_string())
        .unwrap_or_default()
}

/// `a/b/../c` -> `a/c`.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "." | "" => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// Reads one file's modules, imports and the paths it names.
struct FileReader<'t> {
    file: usize,
    /// The folder the file is in (for `#[path]`).
    path_dir: String,
    /// The module the visit is in (inline modules included).
    module: Vec<String>,
    /// The folder where the current module's `mod x;` files are.
    dir: String,
    /// `mod x;` found: (file, module, folder of its own children).
    declared: Vec<(String, Vec<String>, String)>,
    sources: &'t Sources,
    tree: &'t mut ModuleTree,
}

impl FileReader<'_> {
    fn module_mut(&mut self) -> &mut Module {
        let file = self.file;
        self.tree
            .modules
            .entry(self.module.clone())
            .or_insert_with(|| Module {
                file,
                ..Module::default()
            })
    }

    fn reference(&mut self, path: Vec<String>, line: usize) {
        self.tree.references.push(Reference {
            file: self.file,
            module: self.module.clone(),
            path,
            line,
        });
    }

    fn declare(&mut self, m: &syn::ItemMod) {
        let name = m.ident.to_string();
        self.module_mut().children.insert(name.clone());
        let mut module = self.module.clone();
        module.push(name.clone());
        if let Some((_, items)) = &m.content {
            let inner_dir = format!("{}/{name}", self.dir);
            let saved_dir = std::mem::replace(&mut self.dir, inner_dir);
            let saved_module = std::mem::replace(&mut self.module, module);
            let file = self.file;
            self.tree
                .modules
                .entry(self.module.clone())
                .or_default()
                .file = file;
            for item in items {
                self.visit_item(item);
            }
            self.module = saved_module;
            self.dir = saved_dir;
            return;
        }
        let explicit = m.attrs.iter().find_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        });
        let (file, child_dir) = match explicit {
            Some(p) => {
                let file = normalize(&format!("{}/{p}", self.path_dir));
                // A file named by `#[path]` holds its `mod x;` files beside it, as a mod.rs does.
                let dir = parent_dir(&file);
                (file, dir)
            }
            None => {
                let flat = format!("{}/{name}.rs", self.dir);
                let nested = format!("{}/{name}/mod.rs", self.dir);
                let dir = format!("{}/{name}", self.dir);
                let file = if self.sources.contains_key(&flat) {
                    flat
                } else {
                    nested
                };
                (file, dir)
            }
        };
        self.declared.push((file, module, child_dir));
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.use_leaf(prefix, &n.ident, &n.ident),
            syn::UseTree::Rename(r) => self.use_leaf(prefix, &r.ident, &r.rename),
            syn::UseTree::Glob(g) => self.reference(prefix.clone(), line(g.star_token.span)),
            syn::UseTree::Group(g) => {
                for tree in &g.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
    }

    fn use_leaf(&mut self, prefix: &[String], ident: &syn::Ident, name: &syn::Ident) {
        let mut path = prefix.to_vec();
        let alias = if ident == "self" {
            prefix.last().cloned()
        } else {
            path.push(ident.to_string());
            Some(ident.to_string())
        };
        let alias = if name == "self" || name == ident {
            alias
        } else {
            Some(name.to_string())
        };
        if let Some(alias) = alias.filter(|a| a != "_") {
            // `use x;` of an outside crate would name itself: no alias to follow.
            if path.len() > 1 {
                self.module_mut().aliases.insert(alias, path.clone());
            }
        }
        self.reference(path, line(ident.span()));
    }

    /// Paths written inside macro calls (`format!("{}", crate::x::f())`): `a::b::c` sequences.
    fn macro_paths(&mut self, tokens: TokenStream) {
        let mut current: Vec<String> = Vec::new();
        let mut first_line = 0;
        let mut colons = 0;
        let flush = |reader: &mut Self, current: &mut Vec<String>, line: usize| {
            if current.len() > 1 {
                reader.reference(std::mem::take(current), line);
            }
            current.clear();
        };
        for token in tokens {
            match token {
                TokenTree::Ident(ident) if colons == 2 || current.is_empty() => {
                    if current.is_empty() {
                        first_line = line(ident.span());
                    }
                    current.push(ident.to_string());
                    colons = 0;
                }
                TokenTree::Punct(p) if p.as_char() == ':' && !current.is_empty() && colons < 2 => {
                    colons += 1;
                }
                TokenTree::Ident(ident) => {
                    flush(self, &mut current, first_line);
                    first_line = line(ident.span());
                    current.push(ident.to_string());
                    colons = 0;
                }
                TokenTree::Group(g) => {
                    flush(self, &mut current, first_line);
                    colons = 0;
                    self.macro_paths(g.stream());
                }
                _ => {
                    flush(self, &mut current, first_line);
                    colons = 0;
                }
            }
        }
        flush(self, &mut current, first_line);
    }
}

/// `#[cfg(test)]`, `#[cfg(all(test, ...))]`, `#[cfg(doctest)]`: code that only the crate's own
/// tests build (a `not(...)` anywhere in it: built without tests too, so read).
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    fn idents(tokens: TokenStream, out: &mut Vec<String>) {
        for token in tokens {
            match token {
                TokenTree::Ident(ident) => out.push(ident.to_string()),
                TokenTree::Group(g) => idents(g.stream(), out),
                _ => {}
            }
        }
    }
    attrs.iter().any(|a| {
        let syn::Meta::List(list) = &a.meta else {
            return false;
        };
        if !list.path.is_ident("cfg") {
            return false;
        }
        let mut words = Vec::new();
        idents(list.tokens.clone(), &mut words);
        words.iter().any(|w| w == "test" || w == "doctest") && !words.iter().any(|w| w == "not")
    })
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

impl<'ast> Visit<'ast> for FileReader<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if is_test_only(item_attrs(item)) {
            return;
        }
        match item {
            syn::Item::Mod(m) => self.declare(m),
            syn::Item::Use(u) => {
                if u.leading_colon.is_none() {
                    self.use_tree(&mut Vec::new(), &u.tree);
                }
            }
            _ => visit::visit_item(self, item),
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Fn(f) => &f.attrs,
            syn::ImplItem::Const(c) => &c.attrs,
            _ => return visit::visit_impl_item(self, item),
        };
        if !is_test_only(attrs) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            let segments = path.segments.iter().map(|s| s.ident.to_string()).collect();
            self.reference(segments, line(path.span()));
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.macro_paths(mac.tokens.clone());
        visit::visit_macro(self, mac);
    }
}

/// Tarjan's strongly connected components of the graph of `nodes` nodes.
fn strongly_connected<V>(nodes: usize, edges: &BTreeMap<(usize, usize), V>) -> Vec<Vec<usize>> {
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); nodes];
    for &(from, to) in edges.keys() {
        next[from].push(to);
    }
    struct State {
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        counter: usize,
        out: Vec<Vec<usize>>,
    }
    fn connect(v: usize, next: &[Vec<usize>], s: &mut State) {
        s.index[v] = Some(s.counter);
        s.low[v] = s.counter;
        s.counter += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &next[v] {
            match s.index[w] {
                None => {
                    connect(w, next, s);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().expect("v is on the stack");
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(component);
        }
    }
    let mut s = State {
        index: vec![None; nodes],
        low: vec![0; nodes],
        on_stack: vec![false; nodes],
        stack: Vec::new(),
        counter: 0,
        out: Vec::new(),
    };
    for v in 0..nodes {
        if s.index[v].is_none() {
            connect(v, &next, &mut s);
        }
    }
    s.out
}

fn example(files: &[(&str, &str)]) -> Sources {
    files
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect()
}

#[test]
fn import_circles_finds_two_files_that_use_each_other() {
    let found = import_circles(&example(&[
        ("crates/k/src/lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("crates/k/src/a.rs", "use crate::b::B;\npub struct A;\n"),
        (
            "crates/k/src/b.rs",
            "pub struct B;\nfn f() { crate::a::A; }\n",
        ),
        ("crates/k/src/c.rs", "use crate::a::A;\n"),
    ]));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with(
            "circle of 2 files in crates/k/src/lib.rs: crates/k/src/a.rs, crates/k/src/b.rs"
        ),
        "{found:#?}"
    );
    assert!(found[0].contains("crates/k/src/a.rs:1 -> crates/k/src/b.rs (crate::b::B)"));
    assert!(found[0].contains("crates/k/src/b.rs:2 -> crates/k/src/a.rs (crate::a::A)"));
}

#[test]
fn import_circles_follows_super_self_children_macros_and_reexports() {
    // parent -> child through `mod child; use child::X`, child -> parent through `super::`.
    let found = import_circles(&example(&[
        ("crates/k/src/lib.rs", "mod p;\n"),
        (
            "crates/k/src/p.rs",
            "mod child;\nuse child::X;\npub fn f() {}\n",
        ),
        (
            "crates/k/src/p/child.rs",
            "pub struct X;\nfn g() { super::f() }\n",
        ),
    ]));
    assert_eq!(found.len(), 1, "{found:#?}");
    // A path inside a macro call, and a re-export followed to the file that defines the item.
    let found = import_circles(&example(&[
        ("crates/k/src/lib.rs", "mod a;\nmod b;\npub use a::A;\n"),
        (
            "crates/k/src/a.rs",
            "pub struct A;\nfn f() { println!(\"{}\", crate::b::n()); }\n",
        ),
        (
            "crates/k/src/b.rs",
            "use crate::A;\npub fn n() -> u8 { 1 }\n",
        ),
    ]));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(!found[0].contains("lib.rs,"), "{found:#?}");
}

#[test]
fn import_circles_skips_test_modules_and_a_facade() {
    // Unit tests beside the code may use what uses their parent; a crate root re-exporting what
    // its modules use of each other is no circle (`crate::A` leads to a.rs, where A is).
    let found = import_circles(&example(&[
        ("crates/k/src/lib.rs", "mod a;\nmod b;\npub use a::A;\npub use b::f;\n"),
        (
            "crates/k/src/a.rs",
            "pub struct A;\n#[cfg(test)]\nmod tests {\n    use crate::b::f;\n}\n#[cfg(test)]\nmod more;\n",
        ),
        ("crates/k/src/a/more.rs", "use crate::f;\n"),
        ("crates/k/src/b.rs", "use crate::A;\npub fn f() -> A { A }\n"),
    ]));
    assert_eq!(found, Vec::<String>::new());
    // A feature whose name holds "test" is built without tests: its code is read.
    let found = import_circles(&example(&[
        ("crates/k/src/lib.rs", "mod a;\nmod b;\n"),
        (
            "crates/k/src/a.rs",
            "pub struct A;\n#[cfg(feature = \"test-server\")]\nmod server {\n    use crate::b::f;\n}\n",
        ),
        ("crates/k/src/b.rs", "use crate::a::A;\npub fn f() -> A { A }\n"),
    ]));
    assert_eq!(found.len(), 1, "{found:#?}");
    // The same test module without `#[cfg(test)]` makes a circle.
    let found = import_circles(&example(&[
        ("crates/k/src/lib.rs", "mod a;\nmod b;\npub use a::A;\n"),
        (
            "crates/k/src/a.rs",
            "pub struct A;\nmod tests {\n    use crate::b::f;\n}\n",
        ),
        (
            "crates/k/src/b.rs",
            "use crate::A;\npub fn f() -> A { A }\n",
        ),
    ]));
    assert_eq!(found.len(), 1, "{found:#?}");
}
