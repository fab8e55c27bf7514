/// The object graph of an `NSKeyedArchiver` archive, read without the classes it was written
/// with: `$objects` holds every object once, objects refer to each other by ``PropertyList/uid``,
/// and each object's `$class` names its class. Foundation's collections and strings are read
/// into Swift values (``strings(_:)``, ``objects(_:)``, ``dictionary(_:)``).
struct KeyedArchive {
    /// What an archive is missing or holds in an unexpected shape: which object, which key.
    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    let objects: [PropertyList]
    let top: [String: PropertyList]

    init(_ plist: PropertyList) throws {
        guard plist["$archiver"]?.string == "NSKeyedArchiver",
            let objects = plist["$objects"]?.array, let top = plist["$top"]?.dictionary
        else {
            throw Malformed(description: "not an NSKeyedArchiver archive (no $archiver, $objects or $top)")
        }
        self.objects = objects
        self.top = top
    }

    /// The object `value` refers to, or `value` itself when it is inline; `nil` for `$null`.
    func resolve(_ value: PropertyList?) -> PropertyList? {
        guard let value else { return nil }
        guard case let .uid(index) = value else { return value }
        guard index >= 0, index < objects.count else { return nil }
        let object = objects[index]
        return object == .string("$null") ? nil : object
    }

    /// The class name of the object `value` refers to.
    func className(_ value: PropertyList?) -> String? {
        guard let object = resolve(value), let classObject = resolve(object["$class"]) else { return nil }
        return classObject["$classname"]?.string
    }

    /// A string, stored inline or as an `NSString`/`NSMutableString` object.
    func string(_ value: PropertyList?) -> String? {
        guard let object = resolve(value) else { return nil }
        if let text = object.string { return text }
        if let text = object["NS.string"]?.string { return text }
        if case let .data(bytes) = object["NS.bytes"] { return String(decoding: bytes, as: UTF8.self) }
        return nil
    }

    /// The elements of an `NSArray`, `NSSet` or their mutable forms, as references.
    func objects(_ value: PropertyList?) -> [PropertyList]? {
        resolve(value)?["NS.objects"]?.array
    }

    /// The strings of an array or set of strings.
    func strings(_ value: PropertyList?) -> [String]? {
        objects(value)?.compactMap { string($0) }
    }

    /// The keys and values of an `NSDictionary` (or mutable), in the archive's order; `nil` when
    /// it is not one, or a key is not a string.
    func dictionary(_ value: PropertyList?) -> [(key: String, value: PropertyList)]? {
        guard let object = resolve(value), let keys = object["NS.keys"]?.array, let values = object["NS.objects"]?.array,
            keys.count == values.count
        else { return nil }
        var entries: [(key: String, value: PropertyList)] = []
        for (key, value) in zip(keys, values) {
            guard let name = string(key) else { return nil }
            entries.append((name, value))
        }
        return entries
    }

    /// The values of a collection of objects: an array or set, or a dictionary of any kind
    /// (`NSKnownKeysDictionary1` keeps its values in `values`).
    func collectionValues(_ value: PropertyList?) -> [PropertyList]? {
        if let elements = objects(value) { return elements }
        if let entries = dictionary(value) { return entries.map(\.value) }
        if let values = resolve(value)?["values"] { return objects(values) }
        return nil
    }

    /// A number or boolean stored inline, or an `NSNumber` object's value.
    func bool(_ value: PropertyList?) -> Bool? { resolve(value)?.bool }
}
