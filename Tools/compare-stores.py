# Two stores compared table by table: every table but the model cache, rows as sets (columns by
# name), the metadata decoded, triggers and index names. Prints each difference and a count.
# Usage: python3 Tools/compare-stores.py A.sqlite B.sqlite
import sqlite3, sys, plistlib
def dump(p):
    db = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
    out = {}
    for (t,) in db.execute("select name from sqlite_master where type='table' and name not like 'sqlite_%' and name not like '%_node' and name not like '%_parent' and name not like '%_rowid'"):
        cols = sorted(r[1] for r in db.execute(f'pragma table_info("{t}")'))
        if t == 'Z_METADATA':
            v,u,pl = db.execute('select Z_VERSION,Z_UUID,Z_PLIST from Z_METADATA').fetchone()
            out[t] = (v,u,sorted(plistlib.loads(pl).items(), key=lambda x: x[0]).__repr__())
            continue
        q = ",".join(f'"{c}"' for c in cols)
        out[t] = (cols, sorted(db.execute(f'select {q} from "{t}"').fetchall(), key=repr))
    out['(triggers)'] = sorted(db.execute("select name, sql from sqlite_master where type='trigger'").fetchall())
    out['(indexes)'] = sorted(r[0] for r in db.execute("select name from sqlite_master where type='index' and sql is not null"))
    return out
a, b = dump(sys.argv[1]), dump(sys.argv[2])
diff = 0
for t in sorted(set(a) | set(b)):
    if a.get(t) != b.get(t):
        diff += 1
        print("DIFF", t, str(a.get(t))[:300], "||", str(b.get(t))[:300])
print("differences:", diff)
