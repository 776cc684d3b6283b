"""Chinese, Japanese and Korean text (kgsearch/cjk.py, the analyser, the FTS5 content) and a
mixed-language vault of real public text (Sphinx's message catalogues, tests/data/mixed_po)."""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from kgsearch import cjk
from kgsearch.text.tokenize import Analyzer, get_analyzer

DATA = Path(__file__).resolve().parent / "data" / "mixed_po"

NOTES = {
    "zh-backup.md": "# 服务器维护记录\n\n我们每天晚上两点自动备份服务器上的数据库，备份文件保存在另一块硬盘上。"
                    "如果备份失败，系统会发送邮件通知管理员。\n",
    "zh-garden.md": "# 阳台花园\n\n春天的时候，我在阳台上种了西红柿和薄荷。每周浇两次水，夏天需要更多的水。\n",
    "ja-trip.md": "# 出張メモ\n\n来週の月曜日に東京本社で会議があります。出発の前に、新幹線の切符と会議の資料を確認してください。\n",
    "ja-recipe.md": "# 味噌汁の作り方\n\n鍋に水と昆布を入れて、弱火でゆっくり温めます。豆腐とわかめを加えたら、火を止めてから味噌を溶かします。\n",
    "ko-trip.md": "# 여행 계획\n\n다음 달에 부산에서 친구들과 함께 바다를 구경할 예정입니다. "
                  "숙소는 해운대 근처에 있는 작은 호텔로 예약했습니다.\n",
    "ko-study.md": "# 공부 기록\n\n오늘은 도서관에서 세 시간 동안 통계학 교과서를 읽었습니다. 내일은 연습 문제를 풀 생각입니다.\n",
    "en-sync.md": "# Sync at night\n\nThe phone stops syncing at night because battery optimisation kills the background "
                  "service. Exempt the app from battery optimisation to keep the server backup running.\n",
    "en-tokyo.md": "# Tokyo trip\n\nNotes for the Tokyo office visit: the meeting documents and the train tickets.\n",
}

# (query, note that must come first): words taken from inside the sentences above
CJK_QUERIES = [
    ("备份", "zh-backup"), ("服务器", "zh-backup"), ("数据库", "zh-backup"), ("邮件", "zh-backup"),
    ("硬盘", "zh-backup"), ("薄荷", "zh-garden"), ("浇水", None), ("西红柿", "zh-garden"),
    ("確認", "ja-trip"), ("東京", "ja-trip"), ("新幹線", "ja-trip"), ("会議の資料", "ja-trip"),
    ("昆布", "ja-recipe"), ("味噌", "ja-recipe"), ("わかめ", "ja-recipe"),
    ("부산", "ko-trip"), ("호텔", "ko-trip"), ("예약", "ko-trip"), ("해운대", "ko-trip"),
    ("도서관", "ko-study"), ("통계학", "ko-study"), ("교과서", "ko-study"),
]


# ---------------------------------------------------------------------------- units
def test_bigrams_and_runs():
    assert cjk.bigrams("备份服务器") == ["备份", "份服", "服务", "务器"]
    assert cjk.bigrams("猫") == ["猫"]
    assert cjk.bigrams("") == []
    assert cjk.split_runs("v2版本x") == [(False, "v2"), (True, "版本"), (False, "x")]
    assert cjk.cjk_runs("Tokyo 東京 and 서울, テスト") == ["東京", "서울", "テスト"]
    assert cjk.has_cjk("味噌") and cjk.has_cjk("서울") and cjk.has_cjk("カタカナ")
    assert not cjk.has_cjk("plain ascii") and not cjk.has_cjk("données Ελληνικά русский")


def test_spaced_is_what_fts_indexes():
    assert cjk.spaced("备份 server") == " 备 份  server"
    assert cjk.spaced("ascii only") == "ascii only"
    assert cjk.spaced(None) is None and cjk.spaced(b"x") == b"x"


def test_analyzer_cjk_terms():
    a = Analyzer("porter2")
    assert a("我们每天晚上备份服务器。") == ["我们", "们每", "每天", "天晚", "晚上", "上备", "备份", "份服", "服务", "务器"]
    # a word from inside the sentence gives a subset of the sentence's terms
    assert set(a("服务器")) <= set(a("我们每天晚上备份服务器"))
    assert set(a("確認")) <= set(a("資料を確認してください"))
    assert set(a("호텔")) <= set(a("작은 호텔로 예약했습니다"))
    # half-width Katakana is NFKC-folded first; mixed tokens keep their Latin part
    assert a("ﾃｽﾄ") == a("テスト") == ["テス", "スト"]
    assert a("v2版本") == ["v2", "2", "版本"]
    # repeats inside a run count (term frequency)
    assert a("哈哈哈") == ["哈哈", "哈哈"]


def test_stemmer_only_for_ascii_words():
    a = Analyzer("porter2")
    assert a("running connections") == ["run", "connect"]
    # Latin letters are folded first, so a French word typed with or without its accents is
    # one term (and is then stemmed, as its unaccented neighbours always were)
    assert a("données compétences") == a("donnees competences") == ["donne", "compet"]
    assert a("Компьютеры ελληνικές") == ["компьютеры", "ελληνικές"]      # other scripts: kept
    assert get_analyzer().settings()["version"] == 3


def test_english_terms_unchanged():
    """The analyser change leaves ASCII text exactly as before (hand-checked Porter2 outputs)."""
    a = Analyzer("porter2")
    assert a("The StreamingTextResponse parses HTTP headers; blast_radius of os.path.join")[:6] == [
        "streamingtextrespons", "stream", "text", "respons", "pars", "http"]
    assert a("generously organizations") == ["generous", "organiz"]


# ---------------------------------------------------------------------------- index + search
@pytest.fixture(scope="module")
def cjk_db(tmp_path_factory):
    from kgsearch.indexer import index_paths

    root = tmp_path_factory.mktemp("cjk")
    vault = root / "vault"
    vault.mkdir()
    for name, text in NOTES.items():
        (vault / name).write_text(text, encoding="utf-8")
    db = root / "i.db"
    index_paths(db, [str(vault)])
    return db, vault


def _keys(db, q, **kw):
    from kgsearch import search

    return [h.key.split(":", 1)[1].split("#")[0] for h in search(q, db=db, k=5, use_cache=False, **kw).hits]


@pytest.mark.parametrize("query,want", CJK_QUERIES)
def test_word_inside_a_sentence_is_found_first(cjk_db, query, want):
    db, _ = cjk_db
    keys = _keys(db, query)
    if want is None:          # 浇水 is not in the text (浇两次水): no wrong note may claim it by text
        return
    assert keys and keys[0] == want, (query, keys)


def test_quoted_cjk_phrase_uses_fts(cjk_db):
    from kgsearch import search

    db, _ = cjk_db
    res = search('"备份文件"', db=db, k=3, use_cache=False)
    assert res.hits[0].key == "md:zh-backup"
    assert "fts" in res.channels_run
    # the phrase must be adjacent: these characters all occur in the note, but not in this order
    from kgsearch.store.db import Index
    from kgsearch.text import fts

    ix = Index.open(db)
    try:
        ids, _ = fts.search(ix, '"文件备份"')
        assert len(ids) == 0
        ids, _ = fts.search(ix, '"保存在另一块硬盘"')
        assert len(ids) == 1
    finally:
        ix.close()


def test_cjk_note_edited_and_removed_keeps_fts_consistent(tmp_path):
    """FTS5 'delete' gets the values the content view gave (spaced out): after an edit and a
    removal, FTS5's own integrity-check against its content passes and the old words are gone."""
    from kgsearch.indexer import index_paths
    from kgsearch.store.db import Index
    from kgsearch.text import fts

    vault = tmp_path / "v"
    vault.mkdir()
    for name in ("zh-backup.md", "ja-trip.md", "ko-trip.md"):
        (vault / name).write_text(NOTES[name], encoding="utf-8")
    db = tmp_path / "i.db"
    index_paths(db, [str(vault)])
    (vault / "zh-backup.md").write_text("# 服务器\n\n每周一检查磁盘空间。\n", encoding="utf-8")
    (vault / "ko-trip.md").unlink()
    index_paths(db, [str(vault)])
    ix = Index.open(db)
    try:
        ix.conn.execute("INSERT INTO text_fts(text_fts, rank) VALUES('integrity-check', 1)")
        assert len(fts.search(ix, '"备份"')[0]) == 0
        assert len(fts.search(ix, '"磁盘空间"')[0]) == 1
        assert len(fts.search(ix, '"호텔"')[0]) == 0
    finally:
        ix.close()
    assert _keys(db, "磁盘")[0] == "zh-backup"
    assert _keys(db, "호텔") == [] or _keys(db, "호텔")[0] != "ko-trip"


def test_old_index_upgrades_fts_view(tmp_path):
    """An index made before migration 0016 gets the new view and rebuilds its text tables on the
    next run (stale mark), after which a CJK word is found."""
    from kgsearch.indexer import index_paths
    from kgsearch.store import schema

    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "ja.md").write_text(NOTES["ja-trip.md"], encoding="utf-8")
    db = tmp_path / "i.db"
    index_paths(db, [str(vault)])
    conn = sqlite3.connect(db)
    # the view as migration 0008 made it, and 0016 not applied
    conn.executescript("DROP VIEW nodes_fts; CREATE VIEW nodes_fts AS SELECT id, name, kgtext(text) AS text FROM nodes;"
                       "DELETE FROM migrations WHERE name = '0016_fts_cjk';")
    assert schema.MIGRATIONS[-1][0] == "0016_fts_cjk" or "0016_fts_cjk" in dict(schema.MIGRATIONS)
    conn.commit()
    conn.close()
    index_paths(db, [str(vault)])
    conn = sqlite3.connect(db)
    view = conn.execute("SELECT sql FROM sqlite_master WHERE name='nodes_fts'").fetchone()[0]
    conn.close()
    assert "kgcjk" in view
    from kgsearch import search

    assert search('"会議"', db=db, k=1, use_cache=False).hits[0].key == "md:ja"


# ---------------------------------------------------------------------------- mixed languages
def test_mixed_language_vault_of_real_text(tmp_path):
    """Sphinx's messages in English and eight translations (Arabic, Greek, Russian, German,
    French, Chinese, Japanese, Korean): indexing and searching raise nothing, and a word from
    inside a message finds its language's note first."""
    from kgsearch import search
    from kgsearch.indexer import index_paths

    vault = tmp_path / "mixed"
    shutil.copytree(DATA, vault)
    db = tmp_path / "m.db"
    rep = index_paths(db, [str(vault)])
    assert rep.nodes_added >= 9
    for q, lang in [("ソースディレクトリ", "ja"), ("翻訳", "ja"), ("源目录", "zh_CN"), ("디렉토리", "ko"),
                    ("Quellverzeichnis", "de"), ("répertoire", "fr"), ("каталог", "ru"), ("الدليل", "ar"),
                    ("κατάλογος", "el"), ("source directory", "en")]:
        hits = search(q, db=db, k=3, use_cache=False).hits
        assert hits and hits[0].key.split(":", 1)[1].split("#")[0] == lang, (q, [h.key for h in hits])
    for q in ('"源目录"', "テーマ AND 設定", "/dire.to/", "conf.py", "%s", "#", "   "):
        search(q, db=db, k=3, use_cache=False)          # no error on any shape of query


# ---------------------------------------------------------------------------- multilingual model
def test_model_use_switches_to_the_multilingual_model(tmp_path, capsys):
    """`kgsearch model use NAME` re-embeds the index with NAME (kept for later runs); the dense
    channel then ranks a CJK note first for a word of its language; an unknown name is exit 3
    with one line and changes nothing."""
    from kgsearch import search
    from kgsearch.cli import main
    from kgsearch.store.db import Index

    vault = tmp_path / "v"
    vault.mkdir()
    for name in ("zh-backup.md", "ja-trip.md", "ko-trip.md", "en-sync.md"):
        (vault / name).write_text(NOTES[name], encoding="utf-8")
    db = tmp_path / "i.db"
    assert main(["index", str(vault), "--db", str(db), "-q"]) == 0
    capsys.readouterr()
    assert main(["model", "use", "e5-small-multi-192", "--db", str(db)]) == 0
    # it said only "indexed 0 changed file(s) ... +0 ~0 -0 nodes": as if nothing had happened
    assert "re-embedded 4 nodes with e5-small-multi-192 (192 dimensions)" in capsys.readouterr().err
    ix = Index.open(db, readonly=True)
    try:
        assert ix.meta("model_id").startswith("e5-small-multi-192@")
        assert ix.meta_json("settings")["model"] == "e5-small-multi-192"
    finally:
        ix.close()
    for q, want in (("数据库的备份", "zh-backup"), ("会議の資料", "ja-trip"), ("부산 바다", "ko-trip")):
        res = search(q, db=db, k=3, use_cache=False, channels=["dense"])
        assert res.hits[0].key == "md:" + want, (q, [h.key for h in res.hits])
    # a later plain reindex keeps the model
    assert main(["index", "--db", str(db), "-q"]) == 0
    capsys.readouterr()
    assert main(["model", "use", "no-such-model", "--db", str(db)]) == 2      # a usage error, as `index --model` (tests/test_kg_tour.py)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no-such-model" in err[0]
    ix = Index.open(db, readonly=True)
    try:
        assert ix.meta("model_id").startswith("e5-small-multi-192@")
    finally:
        ix.close()
