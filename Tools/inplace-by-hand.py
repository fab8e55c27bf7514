# What a user would write by hand to migrate the demo store in place, one transaction each, in
# Python with sqlite3 and plistlib (for the metadata's property list):
#   small  model N with one optional attribute added to Folder: ALTER TABLE ... ADD COLUMN, then
#          the target's model cache, metadata (its hashes, the store's UUID and the app's keys),
#          persistent history's columns of Folder's changes cleared;
#   drop   the one step the large change cannot do without: ALTER TABLE ZITEM DROP COLUMN ZSIZE
#          (SQLite 3.35+), which rewrites the table in one transaction (no batches, no resume).
# Usage: python3 Tools/inplace-by-hand.py small STORE TARGET | drop STORE
import plistlib, sqlite3, sys

change, store = sys.argv[1], sys.argv[2]
db = sqlite3.connect(store, isolation_level=None)
db.execute("PRAGMA journal_mode = TRUNCATE")
db.execute("BEGIN IMMEDIATE")
if change == "small":
    db.execute("ATTACH ? AS t", (f"file:{sys.argv[3]}?mode=ro",))
    db.execute('ALTER TABLE ZFOLDER ADD COLUMN ZCOLOR VARCHAR')
    db.execute("DELETE FROM Z_MODELCACHE")
    db.execute("INSERT INTO Z_MODELCACHE SELECT * FROM t.Z_MODELCACHE")
    version, uuid, old = db.execute("SELECT Z_VERSION, Z_UUID, Z_PLIST FROM main.Z_METADATA").fetchone()
    new = plistlib.loads(db.execute("SELECT Z_PLIST FROM t.Z_METADATA").fetchone()[0])
    for key, value in plistlib.loads(old).items():
        if not key.startswith("NS") and not key.startswith("_NS"):
            new[key] = value
    new["NSStoreUUID"] = uuid
    db.execute("UPDATE Z_METADATA SET Z_VERSION = (SELECT Z_VERSION FROM t.Z_METADATA), Z_PLIST = ?",
               (plistlib.dumps(new, fmt=plistlib.FMT_BINARY),))
    # Persistent history: which columns a change touched means nothing once Folder's change.
    db.execute("UPDATE ACHANGE SET ZCOLUMNS = NULL WHERE ZENTITY = 1")
elif change == "drop":
    db.execute("ALTER TABLE ZITEM DROP COLUMN ZSIZE")
db.execute("COMMIT")
db.execute("PRAGMA journal_mode = WAL")
