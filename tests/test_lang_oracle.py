"""The source-language loaders against tree-sitter (the oracle of the ``test`` extra): the same
definitions with the same names and start and end lines, on inline samples of every language
and on a small sample of real files (``../shared/bench/code-tasks-multi``); and what happens
when the oracle is not installed. The whole-repository comparison is ``bench/lang_oracle.py``."""
from __future__ import annotations

import importlib.util
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from conftest import SHARED, need

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_lang_oracle", ROOT / "bench" / "lang_oracle.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_lang_oracle"] = mod
    spec.loader.exec_module(mod)
    return mod


lo = _bench()

SAMPLES = {
    "a.go": """\
        package a

        // T is a type.
        type T struct{ x int }

        type (
        \tI interface {
        \t\tM(x int) (int, error)
        \t}
        \tF func(a, b int) int
        )

        func (t *T) M(x int) (int, error) { return x, nil }

        func New[K comparable](k K) *T {
        \treturn &T{}
        }
        """,
    "lib.rs": """\
        /// A thing.
        #[derive(Debug, Clone)]
        pub struct Thing<'a> { s: &'a str }

        impl<'a> Thing<'a> {
            pub(crate) const fn new(s: &'a str) -> Self { Thing { s } }
        }

        pub trait Show: Sized { fn show(&self) -> String; fn twice(&self) {} }

        impl Show for Thing<'_> { fn show(&self) -> String { format!("{}", "}") } }

        macro_rules! m { ($x:expr) => { $x }; }

        mod inner { pub fn f() { fn g() {} } }
        """,
    "A.java": """\
        package p;

        @SuppressWarnings({"a", "b"})
        public class A<T extends Comparable<T>> implements Runnable {
            enum E { X { void f() {} }, Y; void g() {} }
            record R(int a) { R { } }
            @interface Ann { int v() default 1; }
            public A() { this(1); }
            A(int x) { }
            public <U> U map(java.util.function.Function<T, U> f) throws Exception { return null; }
            public void run() { new Thread() { public void run() {} }; }
        }
        """,
    "A.kt": """\
        @file:JvmName("Util")
        package p.q

        import a.b.C as D

        /** A point. */
        @Suppress("unused")
        data class P(val x: Int, val y: Int = 0) : Base(), Comparable<P> {
            companion object {
                fun origin(): P = P(0)
            }
            constructor(s: String) : this(s.length)
            override fun compareTo(other: P): Int =
                x - other.x
            fun `has spaces`() { println("${x + "}"} \\$ ${'$'}{") }
            inner class In { fun f() = Unit }
        }
        sealed interface Shape { fun area(): Double
            fun name(): String = "shape" }
        object Registry { private val m = mutableMapOf<String, Int>()
            fun get(k: String) = m[k] ?: error("no $k") }
        enum class E(val v: Int) { A(1), B(2); open fun g() = 1 }
        fun interface Cb { fun call(x: Int): Int }
        class Empty
        abstract class Gen<T : Any> @Inject constructor(private val t: T) where T : Comparable<T> {
            abstract fun make(): T
        }
        inline fun <reified T> List<T>.second(): T = this[1]
        fun String?.orBlank(): String =
            this
                ?: ""
        val lambda = fun(x: Int): Int { return x }
        fun outer() {
            fun local() = object : Runnable { override fun run() {} }
            local()
        }
        """,
    "a.php": """\
        <html><?php
        namespace App\\Models;

        use App\\Base\\{Model, Thing as T};

        #[Attr(1)]
        final class User extends Model implements \\JsonSerializable, HasName {
            use SoftDeletes;
            public function __construct(private string $name) {}
            /** doc */
            public static function find(int $id): ?self { return self::query()->where("id = {$id} }")->first(); }
            abstract protected function x();
            public function jsonSerialize(): mixed {
                $f = function ($a) use ($b) { return $a; };
                $g = fn($x) => $x * 2;
                if (!function_exists('helper')) { function helper() {} }
                return [];
            }
        }
        interface HasName extends Stringable { public function name(): string; }
        trait SoftDeletes { function delete() { parent::delete(); } }
        enum Suit: string implements HasColor { case Hearts = 'H'; public function color(): string { return "R"; } }
        function tpl($x) { return <<<EOT
          text {$x} }
          EOT; }
        ?>
        <div><?= $x ?> { function not_php() {} }</div>
        """,
    "a.rb": """\
        require_relative "b"
        module Shop
          class Cart < Base::Model
            include Enumerable
            def total(x = 1) = x * 2
            def each(&b)
              @items.each(&b) if ready?
              while busy? do wait end
              y = if x then 1 else 2 end
              "#{ %w(end) } end" + <<~EOS + %q(end)
                def not_one; end
              EOS
            end
            class << self
              def build = new
            end
            def self.find(id)
              /end#{id}/ =~ id ? ?e : nil
            end
          end
        end
        class Shop::Cart::Line; def to_s; end; end
        """,
    "A.cs": """\
        using System;
        namespace P.Q
        {
            [Serializable]
            public partial class A<T> : B, IC where T : class
            {
                public A() : base(1) { }
                ~A() { }
                public int X { get { int Two() => 2; return Two(); } set { } }
                public int Y { get; set; }
                public string this[int i] => $"{i}";
                public static A<T> operator +(A<T> a, A<T> b) => a;
                public static explicit operator int(A<T> a) => 0;
                [Obsolete("x")]
                public U Map<U>(Func<T, U> f) where U : new() { return f(default); }
                event EventHandler E { add { } remove { } }
                record struct R(int A) { public int B() => A; }
            }
            interface IC { void M(); }
            enum E { X }
        }
        """,
    "Modern.cs": """\
        global using System.Text;
        using System.Runtime.CompilerServices;
        namespace Acme.Modern;

        file class Hidden { }

        public sealed class Point3(int x, int y, int z) : Shape(x), IEquatable<Point3>
        {
            public required int X { get; init; } = x;
            public int Y { get => y; init => y = value; }
            public (int, int) Pair() => (x, y);
            public (int A, int B) Named(int k) { return (k, k); }
            public ref readonly int Ref(in int v) => ref v;
            unsafe int* Ptr(int* p) => p;
            public int[] Arr() => [1, 2, 3];
            public string Describe(object o) => o switch
            {
                Point3 { X: > 0 } p => $\"\"\"positive {p.X} {{not a hole}}\"\"\",
                null => "none",
                _ => throw new ArgumentException(nameof(o)),
            };
            public bool Equals(Point3? other) => other is not null && other.X == X;
            IEnumerator<int> IEnumerable<int>.GetEnumerator() { yield return 1; }
            public static bool operator true(Point3 p) => true;
            public static bool operator false(Point3 p) => false;
            public static implicit operator int?(Point3 p) => null;
            public static Point3 operator checked +(Point3 a, Point3 b) => a;
            public event EventHandler? Moved;
            public string this[string key] { get { return key; } set { } }
            public void Run()
            {
                static int Sq(int v) => v * v;
                async Task<T> Later<T>(T v) where T : notnull { await Task.Delay(1); return v; }
                [MethodImpl(MethodImplOptions.AggressiveInlining)]
                int Inline(int q) { return q; }
                var f = [Obsolete] (int a) => a + 1;
                Point3 c = new(1, 2, 3);
                var d = c with { X = 5 };
                Moved?.Invoke(this, EventArgs.Empty);
                if (c is { X: 1 } and not null) { Sq(1); }
                switch (c) { case { X: 1 }: Inline(1); break; default: break; }
                foreach (var (a, b) in new[] { (1, 2) }) { }
                using var s = new MemoryStream();
                lock (this) { }
                checked { Sq(2); }
                try { } catch (Exception e) when (e.Message.Length > 0) { } finally { }
                (int, int) Tup() => (1, 2);
                Tup();
            }
        }

        public interface IShape<TSelf> where TSelf : IShape<TSelf>
        {
            static abstract TSelf Zero { get; }
            static abstract TSelf operator +(TSelf a, TSelf b);
            double Area() => 0;
            double Perimeter { get { return 0; } }
        }

        public abstract record Shape(int Id)
        {
            public virtual string Name => GetType().Name;
            protected Shape(Shape original) { Id = original.Id; }
        }

        public readonly record struct Money(decimal Amount, string Currency = "EUR")
        {
            public static Money operator *(Money m, decimal k) => m with { Amount = m.Amount * k };
        }

        internal enum Flags : ulong { None = 0, A = 1 << 0, B = 1 << 1 }

        public static partial class Log
        {
            [LoggerMessage(Level = LogLevel.Info, Message = "x {Y}")]
            public static partial void Info(ILogger l, int y);
            public delegate T Maker<out T>();
        }

        public struct Vec<T> where T : unmanaged
        {
            public T this[int i] { readonly get => default; set { } }
            public Vec() { }
            public override readonly string ToString() => "";
        }
        """,
    "a.cc": """\
        #include "a.h"
        namespace n {
        template <typename T>
        struct S : public B<T> {
          S() : x_{0}, y_(1) {}
          auto get() const -> int { return x_; }
          bool operator==(const S& o) const { return true; }
          int x_, y_;
        };
        typedef struct { int a; } P;
        static int f(int a) { return a; }
        int S<int>::g() { return 0; }
        }
        extern "C" { int h(void) { return 0; } }
        """,
    "k.c": """\
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
        static int (*getop(char c))(int, int) { return 0; }
        int (*(*nest(int x))(char))(double) { return 0; }
        int (max)(int a, int b) { return a; }
        """,
    "a.js": """\
        import x from './x'
        export default function main(a) { return a }
        const f = async (a) => {
          return a
        }
        const g = a =>
          a + 1
        class C extends D {
          static #p() {}
          get v() { return 1 }
          constructor() { super(); this.h = function () {} }
        }
        module.exports.k = function () {}
        const o = { m() {}, n: function () {}, p: () => 1 }
        X.prototype.q = function () { return `${ {a: 1}.a }` }
        """,
    "a.ts": """\
        export interface I<T> { m(x: T): void; p: (x: T) => void }
        export abstract class A<T extends { k: string }> implements I<T> {
          abstract m(x: T): void;
          p = (x: T): void => {}
          private static z<U>(u: U): U[] { return [u] }
        }
        export enum E { A, B }
        export function over(a: string): void;
        export function over(a: any): void {}
        const t: Map<string, { f(): void }> = new Map()
        """,
    "alias.ts": """\
        export type Handler<T = unknown> = (req: T) => void;
        type Props = {
          onClick(x: number): void
        }
        declare type U = 'a' | 'b'
        type Cond<T> = T extends string
          ? 'str'
          : never;
        function f() { type Local = number; return 1 as Local }
        """,
    "alias.rs": """\
        pub type Result<T, E = Error> = std::result::Result<T, E>;
        #[cfg(unix)]
        pub(crate) type Cb =
            fn(i32) -> i32;
        struct S;
        impl Iterator for S { type Item = u32; fn next(&mut self) -> Option<u32> { None } }
        trait T { type Output; }
        mod m { type Inner = u8; }
        fn f() { type Local = u8; }
        """,
    "alias.c": """\
        typedef unsigned long size_type;
        typedef int (*cb_t)(int, int);
        typedef void fn_t(int);
        typedef char buf_t[16];
        typedef struct foo foo_t, *foo_p;
        typedef struct { int a; } anon_t;
        /* #define NOT_ME(x) x */
        #define MAX(a, b) \\
          ((a) > (b) ? \\
           (a) : (b))
        #if X
        #define MIN(a, b) ((a) < (b) ? (a) : (b))
        #endif
        #define OBJ 1
        """,
    "alias.hpp": """\
        namespace ns {
        template <class T>
        using vec = std::vector<T>;
        using namespace std;
        using std::string;
        class C {
         public:
          using value_type = int;
          typedef std::pair<int, char> pair_type;
        };
        }
        #define CALL(f, ...) f(__VA_ARGS__)
        """,
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_inline_samples_agree_with_tree_sitter(tmp_path, name):
    need("tree_sitter")
    path = tmp_path / name
    path.write_text(textwrap.dedent(SAMPLES[name]))
    lang = lo.oracle_language(name, cpp_tree=True)
    want = Counter(d[:3] for d in lo.oracle_defs(path.read_bytes(), lang, name))
    _, got = lo.loader_defs(path, name, tmp_path)
    assert sum(want.values()) >= 5
    assert not want - Counter(got), want - Counter(got)          # every oracle definition, same lines


# one file per language from the development set's repositories
REAL = ["bytes@291df5acc9/src/bytes.rs", "grpc-go@192c8a2a35/server.go",
        "gson@e614e71ee4/gson/src/main/java/com/google/gson/Gson.java", "jq@f31c180e8f/src/jv.c",
        "fmt@01914f0389/src/os.cc", "Catch2@00347f1e79/include/reporters/catch_reporter_junit.cpp", "dayjs@f4cb2cfd77/src/index.js", "express@a1fa90fcea/lib/router/index.js",
        "darkreader@991883df4d/src/utils/color.ts"]


@pytest.mark.parametrize("rel", REAL, ids=[r.split("/")[-1] for r in REAL])
def test_real_files_agree_with_tree_sitter(rel):
    need("tree_sitter")
    repos = SHARED / "bench" / "code-tasks-multi" / "repos"
    path = repos / rel
    if not path.is_file():
        pytest.skip(f"{path} is not present (set KGSEARCH_SHARED to the shared folder)")
    tree = repos / rel.split("/")[0]
    r = lo.compare_file(path, path.relative_to(tree).as_posix(), tree, cpp_tree=rel.endswith((".cc", ".hpp")))
    assert r["oracle"] > 10
    assert r["clean_start"] == r["clean_end"] == r["clean"], r["misses"][:5]


def test_the_bench_says_what_to_install_when_the_oracle_is_missing(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tree_sitter", None)
    assert lo.oracle_missing().startswith("the oracle is not installed (tree_sitter: ")
    assert lo.main(["--no-save"]) == 2
    err = capsys.readouterr().err
    assert "pip install -e '.[test]'" in err and err.count("\n") == 1
