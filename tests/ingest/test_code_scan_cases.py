"""What the source scanners misread on real trees they had not been tuned on (tRPC, TanStack
Query, yup, javac, nlohmann/json, memchr, darkreader): definition headers and test flags. Each
case is the shape cut down from the file it came from, with the spans, kinds, flags and edges
worked out by hand."""
from __future__ import annotations

import textwrap

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.ingest.loaders import get_loader, loader_for
from kgsearch.store.db import Index
from kgsearch.types import FLAG_TEST, LoadOptions


def load(tmp_path, rel: str, text: str):
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    res = get_loader(loader_for(path)).load(path, rel, LoadOptions(root=str(tmp_path)))
    nodes = {n.qualname.split(":", 1)[1]: (n.kind, n.line_start, n.line_end, n.props.get("decl"))
             for n in res.nodes if n.kind != "module"}
    calls = {(e.src.split(":", 2)[2], e.dst.split("\n")[-1].rsplit(":", 1)[-1]) for e in res.edges
             if e.type == "calls"}
    return nodes, calls


def indexed_edges(tmp_path, root, files: dict, types: tuple[str, ...]) -> set:
    """Write ``files`` under ``root``, index it, and return its (source key, type, target key) edges
    of ``types``."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    db = tmp_path / "i.db"
    index_paths(db, [str(root)], IndexOptions(steps=()))
    with Index.open(db, readonly=True) as ix:
        return set(ix.conn.execute(
            "SELECT s.key, e.type, d.key FROM edges e JOIN nodes s ON s.id = e.src JOIN nodes d ON d.id = e.dst "
            f"WHERE e.type IN ({','.join('?' * len(types))})", types).fetchall())


def test_typescript_return_types_over_several_lines(tmp_path):
    # the return type's brackets span lines (a generic, a tuple, a conditional type); a `{`
    # after `:` opens a type literal, the next one the body
    nodes, calls = load(tmp_path, "src/observer.ts", """\
        export class Observer {
          current(): Result<
            TData,
            TError
          > {
            return this.result
          }

          optimistic(
            queries: Array<Options>,
          ): [
            raw: Array<Result>,
            combine: () => Combined,
          ] {
            return [queries, combine]
          }

          query<$Output>(
            resolver: Resolver<$Output>,
          ): TCaller extends true
            ? (input: In) => Promise<$Output>
            : Procedure<{
                input: In;
              }>;

          get(id: string): Map<string, number> {
            helper(id)
            return new Map()
          }
        }

        export function signal<T extends object>(
          object: T,
        ): T & { signal: AbortSignal } {
          return object
        }

        declare function fake(): {
          now: number;
        };
        """)
    assert nodes == {
        "Observer": ("class", 1, 30, None),
        "Observer.current": ("method", 2, 7, "method"),
        "Observer.optimistic": ("method", 9, 16, "method"),
        "Observer.query": ("method", 18, 24, "signature"),
        "Observer.get": ("method", 26, 29, "method"),
        "signal": ("function", 32, 36, None),
        "fake": ("function", 38, 40, "signature"),    # body-less (since loader version 4)
    }
    assert ("Observer.get", "helper") in calls


def test_typescript_heads_whose_bases_hold_type_literals(tmp_path):
    nodes, _ = load(tmp_path, "src/envelopes.ts", """\
        export interface Options<
          TMeta extends object,
        > extends Partial<
          RootConfig<{
            meta: TMeta;
          }>
        > {
          transformer?: Transformer;
        }

        export interface ResultMessage<TData> extends Response<
          | { type: 'started' }
          | Result<TData>
        > {}
        """)
    assert nodes == {"Options": ("class", 1, 9, "interface"), "ResultMessage": ("class", 11, 14, "interface")}


def test_jsx_children_and_class_attributes_are_not_members(tmp_path):
    # `class="x"` is no class expression and `<p>{label('x')}` no type literal: label() is a call
    # (nor, in JavaScript, `Terms & {renderLink()}`, which TypeScript would read as A & {..})
    nodes, calls = load(tmp_path, "src/page.jsx", """\
        export function Page(props) {
          return (
            <section class="page">
              <p>
                {label('x')}
              </p>
              <button onClick={() => setCount(1)}>{count()}</button>
              <p>Terms & {renderLink()} | {year()}</p>
            </section>
          );
        }
        """)
    assert nodes == {"Page": ("function", 1, 11, None)}
    assert {("Page", "label"), ("Page", "count"), ("Page", "renderLink"), ("Page", "year")} <= calls


def test_typescript_function_type_aliases_are_no_functions(tmp_path):
    nodes, _ = load(tmp_path, "src/types.ts", """\
        export type ContextCallback = (...args: any[]) => object | Promise<object>;
        type Handler<T> = (req: T) => void
        const type = (x) => x
        """)
    assert nodes == {"type": ("function", 3, 3, None),      # the aliases are types (loader version 4)
                     "ContextCallback": ("class", 1, 1, "alias"), "Handler": ("class", 2, 2, "alias")}


def test_typescript_keyword_named_methods_and_multiline_annotations(tmp_path):
    # a Promise-like's catch() and finally() are methods; an interface's `new (..)` is a
    # construct signature, not a method; a const typed over several lines names its arrow
    nodes, _ = load(tmp_path, "src/unpromise.ts", """\
        export class Unpromise<T> {
          catch<R>(onrejected?: (reason: any) => R): Promise<T | R> {
            return this.promise.catch(onrejected);
          }
          finally(onfinally?: () => void): Promise<T> {
            return this.promise.finally(onfinally);
          }
        }
        export interface CancelStatic {
          new (message?: string): Cancel;
        }
        const createContext: ResolveContextFn<
          TRouter
        > = async (innerOpts) => {
          return innerOpts;
        };
        """)
    assert nodes == {
        "Unpromise": ("class", 1, 8, None),
        "Unpromise.catch": ("method", 2, 4, "method"),
        "Unpromise.finally": ("method", 5, 7, "method"),
        "CancelStatic": ("class", 9, 11, "interface"),
        "createContext": ("function", 12, 16, None),
    }


def test_anonymous_class_expressions_still_read(tmp_path):
    # (the JSX `class=` check must keep `class<T> {`, `class implements X {` and `class {`)
    nodes, _ = load(tmp_path, "src/store.ts", """\
        export const Store = class<T> implements Disposable {
          get(id: string): T {
            return lookup(id);
          }
        };
        const Plain = class {
          run() { return 1; }
        };
        """)
    assert nodes == {"get": ("method", 2, 4, "method"), "run": ("method", 7, 7, "method")}


def test_typescript_intersection_type_literals_hold_no_functions(tmp_path):
    # `A & { f: () => void }` is a type: its members are no function definitions (nor those of
    # a type alias with a default type argument); `a && {..}` is still an object literal
    nodes, _ = load(tmp_path, "src/page.tsx", """\
        type SettingsPageProps = ViewProps & {
            onNavClick: () => void;
            flush?(): void;
        };
        export type TimeoutProvider<TTimerId extends TimerId = TimerId> =
          {
            readonly setTimeout: (callback: Callback, delay: number) => TTimerId
          }
        export function Group(props: ViewProps & {onThemeNavClick: () => void}) {
            return ready && {render: () => props};
        }
        """)
    assert nodes == {"SettingsPageProps": ("class", 1, 4, "alias"), "TimeoutProvider": ("class", 5, 8, "alias"),
                     "SettingsPageProps.flush": ("method", 3, 3, "signature"), "Group": ("function", 9, 11, None),
                     "Group.render": ("function", 10, 10, None)}


def test_javascript_regex_literal_after_a_comment(tmp_path):
    # the slash follows a comment, not the name before it: a regular expression, whose ' and {
    # must not open a string or a block that hides the definitions after it
    nodes, _ = load(tmp_path, "index.js", """\
        let rEmail =
        // eslint-disable-next-line
        /^[a-z0-9.!#$%&'*+\\/=?^_`{|}~-]+@[a-z]+$/;
        let isTrimmed = value => isAbsent(value) || value === value.trim();
        function isDate(obj) {
          return Object.prototype.toString.call(obj) === '[object Date]';
        }
        """)
    assert nodes == {"isTrimmed": ("function", 4, 4, None), "isDate": ("function", 5, 7, None)}


def test_java_anonymous_class_of_a_qualified_instance_creation(tmp_path):
    nodes, _ = load(tmp_path, "src/main/java/p/Context.java", """\
        package p;

        class Context {
            void solve(Infer infer) {
                solve(infer.new LeafSolver() {
                    public boolean done() {
                        return true;
                    }
                });
            }
        }
        """)
    assert nodes["Context.solve.done"] == ("method", 6, 8, "method")


def test_cpp_noexcept_with_nested_parentheses(tmp_path):
    nodes, _ = load(tmp_path, "include/m.hpp", """\
        struct ordered_map {
            ordered_map() noexcept(noexcept(Container())) : Container{} {}

            template<typename J>
            static auto from_json(J&& j) noexcept(
                noexcept(::ns::from_json(std::forward<J>(j), std::declval<T&>())))
            -> decltype(::ns::from_json(std::forward<J>(j)))
            {
                return ::ns::from_json(std::forward<J>(j));
            }

            void swap(ordered_map& other) noexcept(noexcept(a(b(c())))) {
                other.clear();
            }
        };
        """)
    assert {k: v[:3] for k, v in nodes.items()} == {
        "ordered_map": ("class", 1, 15),
        "ordered_map.ordered_map": ("method", 2, 2),
        "ordered_map.from_json": ("method", 4, 10),
        "ordered_map.swap": ("method", 12, 14),
    }


def test_rust_items_built_only_for_tests(tmp_path):
    # cfg(all(test, ..)) builds the item only for tests, as cfg(test) does; any(test, ..) and
    # not(test) do not
    path = tmp_path / "src/lib.rs"
    path.parent.mkdir(parents=True)
    path.write_text(textwrap.dedent("""\
        #[cfg(all(test, feature = "std", not(miri)))]
        mod tests {
            fn check() {}
        }

        #[cfg(all(loom, test))]
        pub fn from_static() {}

        #[cfg(any(test, feature = "x"))]
        pub fn helper() {}

        #[cfg(all(not(test), unix))]
        pub fn real() {}
        """))
    res = get_loader("rust").load(path, "src/lib.rs", LoadOptions(root=str(tmp_path)))
    flagged = {n.qualname.split(":", 1)[1]: bool(n.flags & FLAG_TEST) for n in res.nodes if n.kind != "module"}
    assert flagged == {"tests": True, "tests.check": True, "from_static": True, "helper": False, "real": False}


def test_cpp_specialisations_with_bases(tmp_path):
    # a specialisation's template arguments end where its base clause's single `:` starts
    path = tmp_path / "include/traits.hpp"
    path.parent.mkdir(parents=True)
    path.write_text(textwrap.dedent("""\
        namespace detail {
        template<class...> struct conjunction : std::true_type { };
        template<class B, class... Bn>
        struct conjunction<B, Bn...>
        : std::conditional<static_cast<bool>(B::value), conjunction<Bn...>, B>::type {};

        template <typename T>
        class iterator_buffer<T*, T, fixed_buffer_traits> final : public fixed_buffer_traits,
                                                                  public buffer<T> {
        };
        }
        """))
    res = get_loader("cpp").load(path, "include/traits.hpp", LoadOptions(root=str(tmp_path)))
    nodes = {n.key.split(":", 2)[2]: (n.line_start, n.line_end) for n in res.nodes if n.kind != "module"}
    assert nodes == {"detail.conjunction": (2, 2), "detail.conjunction#2": (3, 5), "detail.iterator_buffer": (7, 10)}
    bases = {e.dst.split("\n")[-1] for e in res.edges if e.type == "inherits" and e.src.endswith("iterator_buffer")}
    assert bases == {"fixed_buffer_traits", "buffer"}


def test_c_typedef_name_after_an_attribute(tmp_path):
    path = tmp_path / "xxhash.h"
    path.write_text(textwrap.dedent("""\
        typedef union { unsigned u32; } __attribute__((packed)) unalign;
        static unsigned read32(const void* ptr)
        {
            typedef union { unsigned u32; } __attribute__((packed)) xxh_unalign;
            return ((const xxh_unalign*)ptr)->u32;
        }
        """))
    res = get_loader("c").load(path, "xxhash.h", LoadOptions(root=str(tmp_path)))
    nodes = {n.key.split(":", 2)[2]: (n.kind, n.line_start, n.line_end) for n in res.nodes if n.kind != "module"}
    assert nodes == {"unalign": ("class", 1, 1), "read32": ("function", 2, 6), "read32.xxh_unalign": ("class", 4, 4)}


def test_go_import_of_the_module_root_package_below_the_indexed_root(tmp_path):
    # go.mod in a sub-folder (a Debian gocode tree, a monorepo): importing the module's root
    # package named the folder with a trailing slash, so neither the import nor log.New resolved
    root = tmp_path / "proj"
    edges = indexed_edges(tmp_path, root, {
        "svc/go.mod": "module example.com/log\n",
        "svc/log.go": "package log\n\nfunc New() int { return 1 }\n",
        "svc/hooks/w/w.go": 'package w\n\nimport "example.com/log"\n\nfunc Make() int { return log.New() }\n'},
        ("imports", "calls"))
    assert edges == {("go:svc/hooks/w/w.go", "imports", "go:svc/log.go"),
                     ("go:svc/hooks/w/w.go:Make", "calls", "go:svc/log.go:New")}


def test_cpp_macro_access_labels_and_initialisers_of_reference_bases(tmp_path):
    path = tmp_path / "include/json.hpp"
    path.parent.mkdir(parents=True)
    path.write_text(textwrap.dedent("""\
        class basic_json {
          JSON_PRIVATE_UNLESS_TESTED:
            /// a JSON value
            union json_value {
                int number;
            };
        };
        template <typename To>
        class Cast<To&> : public CastBase<To&> {
         public:
          explicit Cast(const Matcher<To&>& matcher)
              : CastBase<To&>(matcher) {}
        };
        """))
    res = get_loader("cpp").load(path, "include/json.hpp", LoadOptions(root=str(tmp_path)))
    nodes = {n.key.split(":", 2)[2]: (n.line_start, n.line_end) for n in res.nodes if n.kind != "module"}
    assert nodes == {"basic_json": (1, 7), "basic_json.json_value": (4, 6), "Cast": (8, 13), "Cast.Cast": (11, 12)}


def test_c_type_keywords_are_no_calls(tmp_path):
    path = tmp_path / "m.c"
    path.write_text("void apply(void (*fn)(int), int v) { fn(v); (void)v; long w = long(v); }\n")
    res = get_loader("c").load(path, "m.c", LoadOptions(root=str(tmp_path)))
    assert {e.dst.split("\n")[-1] for e in res.edges if e.type == "calls"} == {"fn"}


def test_rust_mod_declarations_find_their_files_where_cargo_does(tmp_path):
    # src/a.rs keeps its `mod b;` in src/a/b.rs (2018 edition); a crate root (lib.rs,
    # tests/*.rs, src/bin/*.rs) and a mod.rs keep theirs beside them
    root = tmp_path / "proj"
    files = {"Cargo.toml": '[package]\nname = "t3"\n',
             "src/lib.rs": "pub mod assets;\n",
             "src/assets.rs": "mod build;\npub fn load() -> i32 { build::make() }\n\n#[cfg(test)]\nmod tests;\n",
             "src/assets/build.rs": "pub fn make() -> i32 { 1 }\n",
             "src/assets/tests.rs": "#[test]\nfn it() {}\n",
             "src/build.rs": "pub fn make() -> i32 { 2 }\n",
             "tests/integration.rs": "mod utils;\n",
             "tests/utils/mod.rs": "pub fn setup() {}\n",
             "src/bin/tool.rs": "mod cli;\nfn main() {}\n",
             "src/bin/cli.rs": "pub fn run() {}\n"}
    edges = {(s, d) for s, _, d in indexed_edges(tmp_path, root, files, ("imports",))}
    assert edges == {("rs:src/lib.rs", "rs:src/assets.rs"), ("rs:src/assets.rs", "rs:src/assets/build.rs"),
                     ("rs:src/assets.rs", "rs:src/assets/tests.rs"), ("rs:tests/integration.rs", "rs:tests/utils/mod.rs"),
                     ("rs:src/bin/tool.rs", "rs:src/bin/cli.rs")}


def test_rust_mod_declarations_inside_inline_modules_are_under_their_folders(tmp_path):
    # rustc reads `mod a { mod x; }` in src/lib.rs from src/a/x.rs (or src/a/x/mod.rs), in
    # src/m.rs from src/m/a/x.rs, in tests/t.rs from tests/a/x.rs. Before: beside the file, so
    # src/x.rs and tests/panic.rs (decoys here) were linked and the real files were not
    root = tmp_path / "proj"
    files = {"Cargo.toml": '[package]\nname = "t5"\n',
             "src/lib.rs": "pub mod m;\nmod outer {\n    mod x;\n    pub mod deep { mod y; }\n}\n",
             "src/outer/x.rs": "pub fn x() {}\n",
             "src/outer/deep/y/mod.rs": "pub fn y() {}\n",
             "src/x.rs": "pub fn decoy() {}\n",
             "src/y.rs": "pub fn decoy() {}\n",
             "src/m.rs": "mod inl { mod z; }\nmod w;\n",
             "src/m/inl/z.rs": "pub fn z() {}\n",
             "src/m/w.rs": "pub fn w() {}\n",
             "src/m/z.rs": "pub fn decoy() {}\n",
             "tests/t.rs": "mod support {\n    pub mod panic;\n}\nuse support::panic::p;\n",
             "tests/support/panic.rs": "pub fn p() {}\n",
             "tests/panic.rs": "#[test]\nfn decoy() {}\n"}
    edges = {(s, d) for s, _, d in indexed_edges(tmp_path, root, files, ("imports",))}
    assert edges == {("rs:src/lib.rs", "rs:src/m.rs"), ("rs:src/lib.rs", "rs:src/outer/x.rs"),
                     ("rs:src/lib.rs", "rs:src/outer/deep/y/mod.rs"), ("rs:src/m.rs", "rs:src/m/inl/z.rs"),
                     ("rs:src/m.rs", "rs:src/m/w.rs"), ("rs:tests/t.rs", "rs:tests/support/panic.rs")}


def test_typescript_generic_defaults_holding_arrows_are_no_definitions(tmp_path):
    # `= () => void` inside a type parameter list is a default type, not a function named after
    # the word before it (`any`, `T`); `extends (` is no call
    nodes, calls = load(tmp_path, "src/g.ts", """\
        function f<F extends (...args: any[]) => any = () => void>(x: F) {}
        function g<T = (a: number) => void>(x: T) {
          return x
        }
        class K<A, T = () => void> { m<U = () => 1>(u: U) {} }
        type H<T = () => void> = (x: T) => void
        const h = <T = () => void>(x: T) => x
        let a = 1, b = () => {}
        const lt = x < y, c = () => 2
        """)
    assert nodes == {"f": ("function", 1, 1, None), "g": ("function", 2, 4, None), "K": ("class", 5, 5, None),
                     "K.m": ("method", 5, 5, "method"), "h": ("function", 7, 7, None), "b": ("function", 8, 8, None),
                     "c": ("function", 9, 9, None), "H": ("class", 6, 6, "alias")}
    assert calls == set()


def test_typescript_namespaces_qualify_what_they_hold(tmp_path):
    # namespace X { } and module X { } are no nodes; their names prefix the definitions in them
    # (A.B for `namespace A.B` and for nested ones), calls inside resolve through them;
    # `declare module "x"` and `declare global` prefix nothing
    nodes, calls = load(tmp_path, "src/n.ts", """\
        namespace X {
          export function f() { return g() }
          function g() { return 1 }
          export class C { m() { return f() } }
        }
        module Y { function h() { X.f() } }
        namespace A.B { export function k() {} }
        namespace A { namespace B { export const z = () => 1 } }
        declare module "foo" { export function zz(): void }
        declare global { function gg(): void }
        """)
    assert nodes == {"X.f": ("function", 2, 2, None), "X.g": ("function", 3, 3, None), "X.C": ("class", 4, 4, None),
                     "X.C.m": ("method", 4, 4, "method"), "Y.h": ("function", 6, 6, None),
                     "A.B.k": ("function", 7, 7, None), "A.B.z": ("function", 8, 8, None),
                     "zz": ("function", 9, 9, "signature"), "gg": ("function", 10, 10, "signature")}
    # a declaration file's namespace merges with the package's export and holds its API: not prefixed
    nodes, _ = load(tmp_path, "types/index.d.ts", """\
        export = dayjs
        declare function dayjs(date?: string): dayjs.Dayjs
        declare namespace dayjs {
          class Dayjs { format(template?: string): string }
        }
        """)
    assert nodes == {"dayjs": ("function", 2, 2, "signature"), "Dayjs": ("class", 4, 4, None),
                     "Dayjs.format": ("method", 4, 4, "signature")}
    text = (tmp_path / "src/n.ts").read_text()
    edges = indexed_edges(tmp_path, tmp_path / "idx", {"n.ts": text}, ("calls",))
    assert edges == {("js:n.ts:X.f", "calls", "js:n.ts:X.g"), ("js:n.ts:X.C.m", "calls", "js:n.ts:X.f"),
                     ("js:n.ts:Y.h", "calls", "js:n.ts:X.f")}


def test_c_knr_definitions_and_functions_returning_function_pointers(tmp_path):
    # K&R: the parameters' declarations stand between the ) and the body; a function returning a
    # function pointer is named by the declarator inside the parentheses; a name in parentheses too
    nodes, calls = load(tmp_path, "src/k.c", """\
        int f(a, b)
        int a;
        char *b;
        {
          return a;
        }

        void (*signal(int sig, void (*func)(int)))(int)
        {
          return func;
        }

        static int (*getop(char c))(int, int) {
          return 0;
        }

        int (*(*nest(int x))(char))(double) { return 0; }

        static char *
        copy(dst, src, n)
        \tchar *dst;
        \tconst char *src;
        \tint (*n)();
        {
        \treturn dst;
        }

        int (max)(int a, int b) { return a > b ? a : b; }

        int g(void) { return f(1, 0) + max(1, 2); }
        int x = 1;
        { }
        """)
    assert nodes == {"f": ("function", 1, 6, None), "signal": ("function", 8, 11, None),
                     "getop": ("function", 13, 15, None), "nest": ("function", 17, 17, None),
                     "copy": ("function", 19, 26, None), "max": ("function", 28, 28, None),
                     "g": ("function", 30, 30, None)}
    assert calls == {("g", "f"), ("g", "max")}


def test_rust_path_attribute_on_an_inline_module_is_its_folder(tmp_path):
    # the Rust reference: `#[path = "thread_files"] mod thread { #[path = "tls.rs"] mod local_data; }`
    # reads thread_files/tls.rs beside the declaring file; in src/a/b.rs the folder is src/a/p
    # (not src/a/b/p), and the inline modules inside it nest under it
    root = tmp_path / "proj"
    files = {"Cargo.toml": '[package]\nname = "t5"\n',
             "src/lib.rs": ('#[path = "thread_files"]\nmod thread {\n    #[path = "tls.rs"]\n    mod local_data;\n'
                            '    mod other;\n}\npub mod a;\n'),
             "src/thread_files/tls.rs": "pub fn tls() {}\n",
             "src/thread_files/other.rs": "pub fn oth() {}\n",
             "src/a.rs": "pub mod b;\n",
             "src/a/b.rs": '#[path = "tf"]\nmod m {\n    mod x;\n    mod deeper { mod y; }\n}\n',
             "src/a/tf/x.rs": "pub fn x() {}\n",
             "src/a/tf/deeper/y.rs": "pub fn y() {}\n"}
    edges = {(s, d) for s, _, d in indexed_edges(tmp_path, root, files, ("imports",))}
    assert edges == {("rs:src/lib.rs", "rs:src/thread_files/tls.rs"), ("rs:src/lib.rs", "rs:src/thread_files/other.rs"),
                     ("rs:src/lib.rs", "rs:src/a.rs"), ("rs:src/a.rs", "rs:src/a/b.rs"),
                     ("rs:src/a/b.rs", "rs:src/a/tf/x.rs"), ("rs:src/a/b.rs", "rs:src/a/tf/deeper/y.rs")}


def test_rust_path_attributes_name_the_module_file(tmp_path):
    # #[path = "p"] is relative to the declaring file's folder; inside inline modules, to the
    # folder their `mod x;` uses (src/a/b.rs: src/a/b/inline/); #[cfg_attr(.., path = "p")]
    # gives each file and the usual one
    root = tmp_path / "proj"
    files = {"Cargo.toml": '[package]\nname = "t4"\n',
             "src/lib.rs": '#[path = "sys/linux.rs"]\nmod platform;\npub mod a;\nmod inline { #[path = "o.rs"] mod o; }\n',
             "src/sys/linux.rs": "pub fn os() {}\n",
             "src/inline/o.rs": "pub fn o() {}\n",
             "src/a.rs": 'pub mod b;\n',
             "src/a/b.rs": ('#[path = "foo.rs"]\nmod c;\n#[path = "../util/x.rs"] pub mod x;\n'
                            '#[cfg_attr(unix, path = "imp/unix.rs")]\nmod imp;\n'
                            'mod inline {\n    #[path = "other.rs"]\n    mod inner;\n}\n'),
             "src/a/foo.rs": "pub fn c() {}\n",
             "src/util/x.rs": "pub fn x() {}\n",
             "src/a/imp/unix.rs": "pub fn u() {}\n",
             "src/a/b/imp.rs": "pub fn i() {}\n",
             "src/a/b/inline/other.rs": "pub fn other() {}\n"}
    edges = {(s, d) for s, _, d in indexed_edges(tmp_path, root, files, ("imports",))}
    assert edges == {("rs:src/lib.rs", "rs:src/sys/linux.rs"), ("rs:src/lib.rs", "rs:src/a.rs"),
                     ("rs:src/lib.rs", "rs:src/inline/o.rs"),
                     ("rs:src/a.rs", "rs:src/a/b.rs"), ("rs:src/a/b.rs", "rs:src/a/foo.rs"),
                     ("rs:src/a/b.rs", "rs:src/util/x.rs"), ("rs:src/a/b.rs", "rs:src/a/imp/unix.rs"),
                     ("rs:src/a/b.rs", "rs:src/a/b/imp.rs"), ("rs:src/a/b.rs", "rs:src/a/b/inline/other.rs")}
