import Foundation

/// SQL functions for the values Core Data stores, registered on every job's connection so that a
/// plan's expressions can take values out of blobs and convert them:
///
/// | function | result |
/// |---|---|
/// | `plist_value(blob, 'a.b.0')` | the value at a key path of a property list (binary or XML): a dictionary key per component, an array index for a number; NULL when a key is absent |
/// | `is_plist(blob)` | 1 when the blob decodes as a property list, else 0 |
/// | `unarchive(blob)` | the root object of an `NSKeyedArchiver` archive (a transformable attribute): a string, number, URL (as text), date (Core Data seconds) or data |
/// | `coredata_to_unix(t)`, `unix_to_coredata(t)` | Core Data timestamps (seconds since 2001-01-01) to and from Unix time |
/// | `uuid_text(blob)`, `uuid_blob(text)` | a 16-byte UUID blob to its text and back |
/// | `text_lower(t)`, `text_upper(t)` | text in lower or upper case, every script's letters (SQLite's own `lower` and `upper` change only ASCII) |
///
/// A value that cannot be converted (a blob that is not a property list, a key path that ends on
/// an array or dictionary) fails the batch, naming the row; `is_plist` and `CASE` let a plan skip
/// such rows instead. Property lists and archives are decoded with Foundation's
/// `PropertyListSerialization` and `NSKeyedUnarchiver`, once per row however many columns read the
/// same blob.
final class ValueFunctions {
    /// Seconds from 1970-01-01 to 2001-01-01, Core Data's reference date.
    static let referenceDateOffset: Int64 = 978_307_200

    /// The last blob `plist_value` decoded and what it decoded to: the columns of one row read the
    /// same blob one after another.
    private var lastBlob: [UInt8] = []
    private var lastPlist: Any?
    private let resolver: Resolver

    init(resolver: Resolver) {
        self.resolver = resolver
    }

    /// Fails the row: the message names the function, and the engine names the entity and batch.
    private func fail(_ message: String) -> MigrationError {
        MigrationError(.batch, message, sourceKey: resolver.batchKeys.last)
    }

    func register(on database: Database) throws(SQLiteError) {
        try Self.registerText(on: database)
        try database.createFunction("plist_value", argumentCount: 2, deterministic: true) { [self] call in
            guard !call.isNull(0) else { return call.resultNull() }
            let root = try plist(call)
            guard case let .text(path) = call.value(1) else { throw fail("plist_value: the key path must be text") }
            call.result(try Self.sqlValue(Self.value(at: path, in: root), function: "plist_value", path: path, fail: fail))
        }
        try database.createFunction("is_plist", argumentCount: 1, deterministic: true) { [self] call in
            guard !call.isNull(0) else { return call.result(Int64(0)) }
            call.result(Int64((try? plist(call)) != nil ? 1 : 0))
        }
        try database.createFunction("unarchive", argumentCount: 1, deterministic: true) { [self] call in
            guard !call.isNull(0) else { return call.resultNull() }
            let data = call.withBytes(0) { Data($0) }
            let object: Any?
            do {
                object = try NSKeyedUnarchiver.unarchivedObject(
                    ofClasses: [NSString.self, NSNumber.self, NSURL.self, NSDate.self, NSData.self], from: data)
            } catch {
                throw fail(
                    "unarchive: the blob is not a keyed archive of a string, number, URL, date or data (\(error.localizedDescription))")
            }
            call.result(try Self.sqlValue(object, function: "unarchive", path: nil, fail: fail))
        }
        try database.createFunction("coredata_to_unix", argumentCount: 1, deterministic: true) { call in
            switch call.value(0) {
            case let .integer(seconds): call.result(seconds + Self.referenceDateOffset)
            case let .real(seconds): call.result(.real(seconds + Double(Self.referenceDateOffset)))
            default: call.resultNull()
            }
        }
        try database.createFunction("unix_to_coredata", argumentCount: 1, deterministic: true) { call in
            switch call.value(0) {
            case let .integer(seconds): call.result(seconds - Self.referenceDateOffset)
            case let .real(seconds): call.result(.real(seconds - Double(Self.referenceDateOffset)))
            default: call.resultNull()
            }
        }
        try database.createFunction("uuid_text", argumentCount: 1, deterministic: true) { [self] call in
            guard !call.isNull(0) else { return call.resultNull() }
            let bytes = call.withBytes(0) { Array($0) }
            guard bytes.count == 16 else { throw fail("uuid_text: a UUID blob has 16 bytes, this one \(bytes.count)") }
            let uuid = UUID(
                uuid: (
                    bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                    bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
                ))
            call.result(.text(uuid.uuidString))
        }
        try database.createFunction("uuid_blob", argumentCount: 1, deterministic: true) { [self] call in
            guard case let .text(text) = call.value(0) else { return call.resultNull() }
            guard let uuid = UUID(uuidString: text) else { throw fail("uuid_blob: \"\(text)\" is not a UUID") }
            call.result(.blob(withUnsafeBytes(of: uuid.uuid) { Array($0) }))
        }
    }

    /// `text_lower` and `text_upper`, which an app's mapping model's case-insensitive comparisons
    /// and `lowercase:`/`uppercase:` translate to: Foundation's case mapping, as `NSString`'s.
    static func registerText(on database: Database) throws(SQLiteError) {
        for (name, map) in [
            ("text_lower", { (text: String) in text.lowercased() }), ("text_upper", { (text: String) in text.uppercased() }),
        ] {
            try database.createFunction(name, argumentCount: 1, deterministic: true) { call in
                guard case let .text(text) = call.value(0) else { return call.result(call.value(0)) }
                call.result(.text(map(text)))
            }
        }
    }

    /// The property list in the call's first argument, decoded once for consecutive calls with the
    /// same bytes.
    private func plist(_ call: FunctionCall) throws -> Any {
        let same = call.withBytes(0) { bytes in
            bytes.count == lastBlob.count
                && lastBlob.withUnsafeBytes { last in
                    bytes.count == 0 || memcmp(last.baseAddress!, bytes.baseAddress!, bytes.count) == 0
                }
        }
        if same, let lastPlist { return lastPlist }
        lastBlob = call.withBytes(0) { Array($0) }
        lastPlist = nil
        do {
            let decoded = try PropertyListSerialization.propertyList(from: Data(lastBlob), options: [], format: nil)
            // Kept as a Swift dictionary: bridged once per row, not once per column that reads it.
            let root: Any = (decoded as? [String: Any]) ?? decoded
            lastPlist = root
            return root
        } catch {
            throw fail("the blob is not a property list (\(lastBlob.count) bytes)")
        }
    }

    /// The value at a dot-separated key path: a dictionary key, or an array index.
    static func value(at path: String, in root: Any) -> Any? {
        var current: Any? = root
        for component in path.split(separator: ".", omittingEmptySubsequences: false).map(String.init) where !path.isEmpty {
            switch current {
            case let dictionary as [String: Any]: current = dictionary[component]
            case let array as [Any]: current = Int(component).flatMap { $0 >= 0 && $0 < array.count ? array[$0] : nil }
            default: return nil
            }
        }
        return current
    }

    /// A decoded value as an SQL value: text, an integer (booleans 0 and 1), a real, a blob, a date
    /// as Core Data seconds since 2001; NULL for none.
    static func sqlValue(
        _ value: Any?, function: String, path: String?,
        fail: (String) -> MigrationError
    ) throws -> SQLiteValue {
        let place = path.map { " at \"\($0)\"" } ?? ""
        switch value {
        case nil: return .null
        case let text as String: return .text(text)
        case let url as URL: return .text(url.absoluteString)
        case let date as Date: return .real(date.timeIntervalSinceReferenceDate)
        case let data as Data: return .blob(Array(data))
        case let flag as Bool where !(value is Int) && !(value is Double):
            return .integer(flag ? 1 : 0)
        case let number as NSNumber:
            // A property list's booleans are NSNumbers of type "c" (char), its reals "d" or "f".
            let type = String(cString: number.objCType)
            if type == "c" || type == "B" { return .integer(number.boolValue ? 1 : 0) }
            return ["f", "d"].contains(type) ? .real(number.doubleValue) : .integer(number.int64Value)
        case is [Any], is [String: Any]:
            throw fail("\(function): the value\(place) is an array or a dictionary; name one of its elements in the key path")
        default:
            throw fail("\(function): the value\(place) is a \(type(of: value!)), which has no SQL value")
        }
    }
}
