"""Tokenizer and stemmers: code-aware splitting, stop words, light stemmer, Porter2 vs Snowball."""
from __future__ import annotations

import re
import sysconfig
from pathlib import Path

import pytest

from conftest import need

from kgsearch.text.stem import LIGHT_SUFFIXES, get_stemmer, light_stem, porter2_stem
from kgsearch.text.tokenize import Analyzer, fold_latin, get_analyzer, raw_tokens, split_identifier

# word:stem pairs produced by snowballstemmer 3.1.1 (english): every rule branch and the
# exception list, plus a random sample of corpus words. Runs without snowballstemmer.
PORTER2_FIXED = """
andes:andes atlas:atlas bias:bias cosmos:cosmos early:earli gently:gentl howe:howe idly:idl
news:news only:onli singly:singl skies:sky skis:ski sky:sky ugly:ugli dying:die lying:lie
tying:tie inning:inning outing:outing canning:canning herring:herring earring:earring
evening:evening proceed:proceed exceed:exceed succeed:succeed proceeded:proceed
succeeding:succeed generously:generous generate:generat general:general communism:communism
community:communiti arsenal:arsenal university:universiti universal:universal emergency:emergenc
emerge:emerg organization:organiz organic:organic interesting:interest internal:internal
later:later laterally:lateral past:past pasta:pasta pasted:paste caress:caress caresses:caress
ponies:poni ties:tie cries:cri gas:gas gaps:gap kiwis:kiwi hopping:hop hoped:hope added:add
agreed:agre feed:feed bleed:bleed luxuriating:luxuri hopefully:hope sizing:size filing:file
conflated:conflat troubled:troubl happy:happi cry:cri by:by say:say rational:ration
conditional:condit valency:valenc hesitancy:hesit digitizer:digit conformably:conform
radically:radic differently:differ vilely:vile analogously:analog vietnamization:vietnam
predication:predic operator:oper feudalism:feudal decisiveness:decis hopefulness:hope
callousness:callous formality:formal sensitivity:sensit sensibility:sensibl triplicate:triplic
formative:format formalize:formal electricity:electr electrical:electr hopeful:hope
goodness:good revival:reviv allowance:allow inference:infer airliner:airlin gyroscopic:gyroscop
adjustable:adjust defensible:defens irritant:irrit replacement:replac adjustment:adjust
dependent:depend adoption:adopt homologou:homologou activate:activ angularity:angular
homologous:homolog effective:effect bowdlerize:bowdler probate:probat rate:rate cease:ceas
controll:control roll:roll biologist:biolog geology:geolog apologist:apolog astrologist:astrolog
fluently:fluentli lessly:lessli fullness:full says:say flying:fli knightly:knight
knightlier:knightlier knightliest:knightliest archaeologies:archaeolog ogi:ogi logi:logi
logic:logic ological:olog dy:dy sly:sli eying:eye eyed:eye yelling:yell yell:yell youth:youth
yodeling:yodel 'tis:tis o'clock:o'clock it's:it boys':boy flare:flare whenever:whenev
cochrane:cochran hugoniot:hugoniot phluorin:phluorin aperture:apertur axicabtagene:axicabtagen
stably:stabli misrouted:misrout blind:blind guttatus:guttatus nonfragmented:nonfrag
artifacts:artifact unclonable:unclon matched:match dehydrocholesterol:dehydrocholesterol
androgens:androgen biconvex:biconvex inserts:insert imposed:impos automaton:automaton
discovered:discov biostatistical:biostatist multifield:multifield indispensible:indispens
asexuals:asexu sterilizing:steril negatively:negat causative:causat wgcna:wgcna describe:describ
parietale:parietal papreg:papreg nongovernmental:nongovernment wheelchairs:wheelchair
assuming:assum nixdorf:nixdorf nonoriented:nonori hybrids:hybrid apoptosis:apoptosi
deposition:deposit antisymmetric:antisymmetr mycophenolic:mycophenol taking:take checks:check
ergosterol:ergosterol impulsive:impuls classical:classic molecular:molecular
cardiorespiratory:cardiorespiratori neuromodulators:neuromodul extremes:extrem nahr:nahr
spindle:spindl preexistent:preexist cooperation:cooper broader:broader
nondisadvantaged:nondisadvantag neuropathic:neuropath penetrated:penetr coupling:coupl
hatched:hatch booker:booker mpga:mpga pyridone:pyridon astronomy:astronomi nearing:near
aspartic:aspart overestimated:overestim datasets:dataset lysc:lysc precursors:precursor
millimetre:millimetr infiltrates:infiltr science:scienc fbdos:fbdos kilogram:kilogram
upgrades:upgrad irrespective:irrespect graves:grave exclusive:exclus doacs:doac
shwachman:shwachman converter:convert prophylaxis:prophylaxi season:season disruptively:disrupt
belatacept:belatacept nicd:nicd execute:execut microbubble:microbubbl lvedp:lvedp
thiouridine:thiouridin garrick:garrick recommendation:recommend invaded:invad
equilibrative:equilibr optical:optic azido:azido cardiovasculature:cardiovasculatur
mechanistically:mechanist impose:impos computes:comput reviewers:review gamble:gambl
codons:codon ventilator:ventil lmcat:lmcat incomplete:incomplet anglo:anglo polyester:polyest
barrier:barrier rolls:roll myoepithelial:myoepitheli neutrophilia:neutrophilia sestrin:sestrin
thoracolumbar:thoracolumbar sporozoite:sporozoit favorable:favor fusions:fusion
programmes:programm ggti:ggti ntpase:ntpase lysogenic:lysogen noncell:noncel silencer:silenc
isozymes:isozym autoantigen:autoantigen substoichiometric:substoichiometr blasts:blast wavy:wavi
eloquent:eloqu laszlo:laszlo prominently:promin pluripotetn:pluripotetn atresia:atresia
assessed:assess recs:rec proteogenomic:proteogenom facilitator:facilit peyer:peyer
nocodazole:nocodazol predictor:predictor stainless:stainless intrachromosomally:intrachromosom
ephedrine:ephedrin quinone:quinon histopathological:histopatholog traditionally:tradit
polyinosinic:polyinosin generations:generat aiib:aiib volts:volt juxtamembrane:juxtamembran
glycolipid:glycolipid conduction:conduct organelle:organell cardiogenesis:cardiogenesi lsil:lsil
ascvd:ascvd demyelinating:demyelin rune:rune equalities:equal cetirizine:cetirizin
reinsertion:reinsert division:divis hydrophobicity:hydrophob hormonally:hormon
uniparental:uniparent thawed:thaw lysine:lysin bedding:bed concise:concis invaluable:invalu
hyperphosphatasia:hyperphosphatasia mucopolysaccharidosis:mucopolysaccharidosi
endoscopically:endoscop took:took chloro:chloro sprouty:sprouti inhibitor:inhibitor
teleost:teleost multicentre:multicentr endovascular:endovascular psychiatrists:psychiatrist
immunospot:immunospot gpna:gpna prefrontal:prefront torical:toric herpesvirus:herpesvirus
yule:yule diaphragm:diaphragm cocke:cock benefit:benefit contigs:contig cocultures:cocultur
dictating:dictat pipelined:pipelin differred:differ addictive:addict linearization:linear
streets:street nonteaching:nonteach corium:corium edited:edit entering:enter accagccu:accagccu
clenshaw:clenshaw improvement:improv misapplied:misappli hand:hand orai:orai neliac:neliac
fibronectin:fibronectin worms:worm cdna:cdna prioritization:priorit tangency:tangenc
melting:melt wine:wine outs:out phylogenies:phylogeni potatoes:potato relaxation:relax
ardizationof:ardizationof itch:itch tropicalis:tropicali thalamogeniculate:thalamogenicul
seasons:season wodaklab:wodaklab thinning:thin predatory:predatori simplicity:simplic
mysterious:mysteri householder:household hydroxi:hydroxi hydroxynonenal:hydroxynonen hspgs:hspgs
bromosulfophthalein:bromosulfophthalein lewy:lewi pathologist:patholog
hyperfluorescence:hyperfluoresc asthma:asthma credited:credit audio:audio
decarboxylase:decarboxylas interlaboratory:interlaboratori completed:complet cajal:cajal
fusiform:fusiform oceanospirillales:oceanospirillal arabs:arab brightest:brightest aaron:aaron
neogenesis:neogenesi cocultured:cocultur misuse:misus breast:breast widen:widen growing:grow
oscar:oscar aliasing:alias autopsies:autopsi thing:thing dean:dean oscillometric:oscillometr
helminth:helminth clubs:club pathophysiological:pathophysiolog downward:downward xiap:xiap
genioglossus:genioglossus offspring:offspr gsno:gsno late:late catherine:catherin
captured:captur surgeries:surgeri litter:litter kinematic:kinemat leukemias:leukemia like:like
fans:fan biceps:bicep class:class briefings:brief residing:resid gamma:gamma reliably:reliabl
egypt:egypt lengthen:lengthen stokes:stoke probmap:probmap competency:compet mentation:mentat
airflows:airflow dapsone:dapson wisepill:wisepil wolff:wolff micropatterns:micropattern
gray:gray clinician:clinician printed:print monoplane:monoplan unencumbered:unencumb
allocated:alloc reynolds:reynold micropapillary:micropapillari examples:exampl
peripherals:peripher tefb:tefb biotic:biotic projects:project supercircular:supercircular
eclampsia:eclampsia mest:mest hacs:hac unanswered:unansw concordances:concord
glycosaminoglycan:glycosaminoglycan sannon:sannon desacyl:desacyl minh:minh monitoring:monitor
scrutinizes:scrutin maneuvering:maneuv forapoegenotypes:forapoegenotyp pdgf:pdgf
descendants:descend orthologous:ortholog spaghetti:spaghetti serrate:serrat rgls:rgls
swivelase:swivelas cspg:cspg snel:snel discerned:discern
hyperhomocysteinemia:hyperhomocysteinemia relaxes:relax slipped:slip determinations:determin
cycle:cycl mescs:mesc lour:lour glycolytically:glycolyt recruiters:recruit alphabet:alphabet
allotetraploid:allotetraploid sgbm:sgbm engenders:engend laminopathies:laminopathi
dysthymia:dysthymia crustaceans:crustacean proceeding:proceed oncogen:oncogen ygibc:ygibc
gastrula:gastrula intraprotomer:intraprotom solvay:solvay viii:viii rblow:rblow
germination:germin xdms:xdms guanylate:guanyl becs:bec depicting:depict brief:brief
determines:determin lace:lace culprits:culprit ftsz:ftsz damp:damp lieu:lieu packard:packard
truly:truli orchestrators:orchestr subtelomeres:subtelomer aborting:abort lesion:lesion
uncaps:uncap phosphorylethanolamine:phosphorylethanolamin gastroenterologists:gastroenterolog
sirnas:sirna peristomal:peristom better:better subarachnoid:subarachnoid planktonic:plankton
case:case uncomfortable:uncomfort hominoids:hominoid seer:seer pylori:pylori resisted:resist
cuts:cut legs:leg transduces:transduc controversies:controversi insofar:insofar setd:setd
pbmcs:pbmcs formylation:formyl bilaterally:bilater size:size weighing:weigh rarity:rariti
hunters:hunter keap:keap hypermethylation:hypermethyl reoperation:reoper wellness:well betz:betz
readouts:readout commercially:commerci confounders:confound centile:centil allopatry:allopatri
cocrystallized:cocrystal normalize:normal typed:type kill:kill snrpn:snrpn phyt:phyt
climatic:climat organoid:organoid stereospecific:stereospecif nuisance:nuisanc
lateralis:laterali pigl:pigl violates:violat giant:giant colloid:colloid msvo:msvo mrnp:mrnp
chaos:chao aggregation:aggreg adiposity:adipos sinus:sinus reasonableness:reason
phenothiazines:phenothiazin brittle:brittl microfilament:microfila residences:resid
venturis:venturi chromatography:chromatographi insignificant:insignific themes:theme
crystals:crystal stephen:stephen thiazolidinedione:thiazolidinedion decoy:decoy allowable:allow
downloads:download deficiency:defici estrous:estrous malformations:malform discourage:discourag
robust:robust nonprocedural:nonprocedur flowing:flow dystrobrevins:dystrobrevin moraceae:moracea
improves:improv stump:stump chaperone:chaperon asset:asset uncondensed:uncondens relaxing:relax
gluconeogenic:gluconeogen trinity:triniti janus:janus plce:plce noninclined:noninclin
spermatogenic:spermatogen tweezers:tweezer mercury:mercuri incentives:incent sterol:sterol
unlabeled:unlabel thyroidectomy:thyroidectomi malonylation:malonyl channel:channel
millions:million coding:code mexicanus:mexicanus mdia:mdia aerothermoelastic:aerothermoelast
thermocouple:thermocoupl interferometric:interferometr schizophrenic:schizophren
corporation:corpor opposition:opposit academicians:academician scheduling:schedul
siniossoglou:siniossoglou coagulative:coagul conservative:conserv circuit:circuit larg:larg
overexpanded:overexpand realisation:realis cassettes:cassett mycobacteria:mycobacteria
assortment:assort flowers:flower preferentially:preferenti messengers:messeng migraines:migrain
musculus:musculus licensing:licens seminar:seminar bulb:bulb tonsil:tonsil nahs:nah arrow:arrow
docetaxel:docetaxel crinkle:crinkl endomembranes:endomembran antagonistically:antagonist
sapk:sapk booster:booster materials:materi ipsc:ipsc nanotubule:nanotubul allostery:allosteri
ribosomal:ribosom treadmill:treadmil undershoot:undershoot atac:atac interrogated:interrog
flora:flora origination:origin marketization:market mechanochemical:mechanochem cuznsod:cuznsod
processing:process endomitotic:endomitot irak:irak matlab:matlab mining:mine sodium:sodium
maternally:matern vsgs:vsgs divisor:divisor propofol:propofol metronidazole:metronidazol
thripp:thripp thrashing:thrash wakes:wake vacuolation:vacuol eagle:eagl unwanted:unwant
naadp:naadp transrepression:transrepress warnings:warn cytolytic:cytolyt substrata:substrata
intratumour:intratumour chlorotyrosine:chlorotyrosin impending:impend cataract:cataract
household:household interphalangeal:interphalang fenfluramine:fenfluramin axiomatic:axiomat
pontis:ponti discover:discov influence:influenc azauracil:azauracil defiant:defiant polyp:polyp
expandable:expand semiautonomous:semiautonom categorised:categoris trilobulated:trilobul
schuh:schuh collaborate:collabor visuospatial:visuospati quicki:quicki permanente:permanent
planck:planck gyri:gyri citric:citric drawbacks:drawback tomography:tomographi chmda:chmda
knowledgebase:knowledgebas deoxynucleotides:deoxynucleotid reprinted:reprint worked:work
hydroxycholecalciferol:hydroxycholecalciferol touched:touch lisp:lisp compliant:compliant
polyclonal:polyclon strikes:strike deserves:deserv psyche:psych inland:inland membrane:membran
hypochromic:hypochrom funds:fund includes:includ ctnnb:ctnnb goes:goe fibrogenesis:fibrogenesi
bisulfite:bisulfit rater:rater gynandromorph:gynandromorph affirmative:affirm fujita:fujita
multitrait:multitrait jean:jean interictal:interict protuberances:protuber aerobics:aerob
hindlimbs:hindlimb formalized:formal merus:merus pack:pack eutopic:eutop
mechanoreceptor:mechanoreceptor atlanta:atlanta canard:canard unmyelinated:unmyelin
serpina:serpina devreased:devreas threshold:threshold bryostatin:bryostatin beset:beset
eipa:eipa emerging:emerg anhydrosis:anhydrosi ubiquitinylation:ubiquitinyl scrupulous:scrupul
copy:copi elutes:elut retrotransposons:retrotransposon cfse:cfse squaring:squar
incorporates:incorpor survey:survey undergo:undergo postural:postur spreads:spread wehave:wehav
dyspareunia:dyspareunia iadl:iadl cntf:cntf unpleasant:unpleas meissner:meissner
neuroleptics:neurolept lundehunds:lundehund prostaglandins:prostaglandin
fluorochrome:fluorochrom biomart:biomart enforced:enforc arthritis:arthriti siren:siren
preventability:prevent corralling:corral inducers:induc triamcinolone:triamcinolon axially:axial
eligibles:elig virtue:virtu adults:adult pathophysiologically:pathophysiolog
biofeedback:biofeedback skilled:skill eccentricity:eccentr berman:berman
opiomelanocortin:opiomelanocortin synuclein:synuclein dermal:dermal attitudes:attitud
egbert:egbert technic:technic catarrhalis:catarrhali isgs:isg adaptively:adapt fundus:fundus
multipriority:multiprior implied:impli utilises:utilis unhealthy:unhealthi
electrophysiological:electrophysiolog ovulate:ovul cervix:cervix anthracyclins:anthracyclin
micrognathia:micrognathia pupal:pupal disability:disabl virologic:virolog cadherins:cadherin
ecosystems:ecosystem apple:appl copayment:copay cytochalasin:cytochalasin vegan:vegan
"""


def test_identifier_whole_and_split():
    a = Analyzer("none")
    assert a("StreamingTextResponse") == ["streamingtextresponse", "streaming", "text", "response"]
    assert a("blast_radius") == ["blastradius", "blast", "radius"]
    assert a("os.path.join()") == ["ospathjoin", "os", "path", "join"]
    assert a("HTTPServer") == ["httpserver", "http", "server"]
    assert a("getX2Value") == ["getx2value", "get", "2", "value"]   # the single letter x is a stop word
    # BlastRadius and blast_radius meet on the whole form
    assert a("BlastRadius")[0] == a("blast_radius")[0]


def test_plain_words_lowercase_stopwords_and_punctuation():
    a = Analyzer("none")
    assert a("The Cells of the brain, and IL-6!") == ["cells", "brain", "il", "6"]
    assert a("self.x = None; return True") == []               # code noise words and letters
    assert a("don't stop") == ["stop"]
    assert a("0.05 v1.2") == ["0", "05", "v1", "1", "2"]        # numbers are not dotted identifiers
    assert a("") == [] and a("   \t\n") == []


def test_unicode():
    a = Analyzer("none", fold=False)        # (an index made before accents were folded)
    assert a("Café ÜBER straße") == ["café", "über", "straße"]
    assert a("ÜberKlasse") == ["überklasse", "über", "klasse"]
    assert a("ﬁle") == ["file"]                                 # NFKC folds the ligature
    assert a("日本語") == ["日本", "本語"]                       # CJK runs: character bigrams (kgsearch.cjk)
    assert split_identifier("naïveBayes") == ["naïve", "Bayes"]


def test_latin_accents_fold_and_other_scripts_stay():
    # a note in French, German or Polish was not found by its words typed without accents
    # ("creme brulee", "strasse"): the terms kept them
    a = Analyzer("porter2")
    assert a("Café crème brûlée Résumé naïve Straße Łódź Việt Ærø") == [
        "cafe", "creme", "brule", "resum", "naiv", "strass", "lodz", "viet", "aero"]
    assert a("creme brulee resume strasse") == ["creme", "brule", "resum", "strass"]
    assert a("CaféBar") == ["cafebar", "cafe", "bar"]
    # marks on letters of other scripts, and other characters, stay
    assert a("йод Ελλάδα हिन्दी 备份") == ["йод", "ελλάδα", "हिन्दी", "备份"]
    assert fold_latin("Crème ŁÓDŹ й ά ﬁ") == "Creme LODZ й ά ﬁ"
    assert fold_latin("Ærø ÆRØ Œuvre STRAẞE") == "Aero AERO Oeuvre STRASSE"     # (AEro would split as CamelCase)
    assert get_analyzer()("Été") == ["ete"] and get_analyzer(fold=False)("Été") == ["été"]
    # Hebrew niqqud and Arabic harakat are optional: a word with them is the word without
    assert a("עִבְרִית עברית العَرَبِيَّة العربية") == ["עברית", "עברית", "العربية", "العربية"]


def test_combining_marks_are_part_of_words():
    # Python's \w leaves combining marks out: Hindi, Tamil, Bengali fell apart at every vowel
    # sign into single letters ('हिन्दी' -> 'ह', 'न', 'द'), and so did a Latin word in decomposed
    # form (macOS file names: 'e' + U+0301)
    a = Analyzer("porter2")
    assert a("हिन्दी भाषा தமிழ் মোড বাংলা") == ["हिन्दी", "भाषा", "தமிழ்", "মোড", "বাংলা"]
    assert a("e\u0301te\u0301 cafe\u0301s") == ["ete", "cafe"]
    assert raw_tokens("हिन्दी x.y") == ["हिन्दी", "x.y"]
    # an index made before (analysis 2) keeps its rules: its postings were made with them
    assert get_analyzer(fold=False, analysis=2)("हिन्दी") == ["ह", "न", "द"]


def test_the_marks_table_is_the_running_python_s():
    import unicodedata
    from kgsearch.text.marks import MARKS

    rx = re.compile(f"[{MARKS}]")
    same = unicodedata.unidata_version == "14.0.0"     # (made from Python 3.11's; a newer one adds marks)
    for cp in range(0x110000):
        c = chr(cp)
        mark = unicodedata.category(c) in ("Mn", "Mc", "Me")
        assert (bool(rx.match(c)) == mark) if same else (mark or not rx.match(c)), hex(cp)


def test_stemmed_analyzer_and_memo():
    a = Analyzer("porter2")
    assert a("running studies StreamingTextResponse") == [
        "run", "studi", "streamingtextrespons", "stream", "text", "respons"]
    assert a("running") is not None and "running" in a._memo
    with pytest.raises(Exception):
        get_stemmer("nope")


def test_light_stemmer_rules():
    assert LIGHT_SUFFIXES[0] == "ation" and LIGHT_SUFFIXES[-1] in {"ed", "er", "ly", "al"}
    cases = {"information": "inform", "relation": "rel", "connection": "connec", "tension": "ten",
             "movement": "move", "darkness": "dark", "readable": "read", "visible": "vis",
             "helpful": "help", "careless": "care", "famous": "fam", "active": "act",
             "running": "runn", "walked": "walk", "walker": "walk", "fastest": "fast",
             "quickly": "quick", "formal": "form", "ability": "abil",
             # only strip when at least 3 characters remain
             "sing": "sing", "red": "red", "bed": "bed", "ally": "ally", "being": "being"}
    for word, stem in cases.items():
        assert light_stem(word) == stem, word


def test_porter2_fixed_list():
    pairs = [p.split(":") for p in PORTER2_FIXED.split()]
    assert len(pairs) >= 800
    bad = [(w, s, porter2_stem(w)) for w, s in pairs if porter2_stem(w) != s]
    assert not bad


def _vocabulary(limit: int = 40000) -> list[str]:
    words: set[str] = set()
    shared = Path(__file__).resolve().parents[2].parent / "shared" / "bench"
    srcs = sorted(shared.glob("*/corpus.jsonl")) if shared.is_dir() else []
    for p in srcs:
        words.update(re.findall(r"[a-z]+", p.read_text(encoding="utf-8", errors="replace").lower()))
        if len(words) >= limit:
            break
    if len(words) < 20000:          # no shared data: the standard library's source and docstrings
        for p in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
            try:
                text = p.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            words.update(w.lower() for w in re.findall(r"[A-Za-z]+", text))
            if len(words) >= limit:
                break
    return sorted(words)


def test_porter2_agrees_with_snowball():
    snowball = need("snowballstemmer")
    ref = snowball.stemmer("english")
    vocab = _vocabulary()
    if len(vocab) < 20000:
        pytest.skip(f"only {len(vocab)} words found")
    bad = [w for w in vocab if porter2_stem(w) != ref.stemWord(w)]
    agreement = 1 - len(bad) / len(vocab)
    assert agreement >= 0.999, (agreement, bad[:20])
