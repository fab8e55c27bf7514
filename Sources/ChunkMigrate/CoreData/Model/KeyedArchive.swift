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
              let objects = plist["$objects"]?.array, let top = plist["$top"]?.dictionary else {
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

    /// The keys and values of an `NSDictionary` (or mutable), in the archive's order.
    func dictionary(_ value: PropertyList?) -> [(key: String, value: PropertyList)]? {
        guard let object = resolve(value), let keys = object["NS.keys"]?.array, let values = object["NS.objects"]?.array,
              keys.count == values.count else { return nil }
        return zip(keys, values).compactMap { key, value in string(key).map { ($0, value) } }
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

/// An archive being written: objects are appended to `$objects` and referred to by index.
struct KeyedArchiveWriter {
    private(set) var objects: [PropertyList] = [.string("$null")]
    private var classes: [String: Int] = [:]

    /// A reference to `$null`.
    static let null = PropertyList.uid(0)

    /// Appends an object of class `className` (with its superclasses, for `$classes`) and
    /// returns its reference; `fields` may refer to objects appended later through ``reserve()``.
    mutating func append(_ className: String, superclasses: [String] = ["NSObject"], _ fields: [String: PropertyList]) -> PropertyList {
        let reference = reserve()
        fill(reference, className, superclasses: superclasses, fields)
        return reference
    }

    /// A reference to an object whose contents ``fill(_:_:superclasses:_:)`` gives later (for
    /// objects that refer to each other).
    mutating func reserve() -> PropertyList {
        objects.append(.string("$null"))
        return .uid(objects.count - 1)
    }

    /// Gives the object `reference` its class and fields.
    mutating func fill(_ reference: PropertyList, _ className: String, superclasses: [String] = ["NSObject"],
                       _ fields: [String: PropertyList]) {
        guard case let .uid(index) = reference else { return }
        var fields = fields
        fields["$class"] = classReference(className, superclasses: superclasses)
        objects[index] = .dictionary(fields)
    }

    /// A string object.
    mutating func string(_ text: String?) -> PropertyList {
        guard let text else { return Self.null }
        objects.append(.string(text))
        return .uid(objects.count - 1)
    }

    /// An `NSArray` of references.
    mutating func array(_ elements: [PropertyList], className: String = "NSArray") -> PropertyList {
        append(className, superclasses: className == "NSArray" ? ["NSObject"] : ["NSArray", "NSObject"], ["NS.objects": .array(elements)])
    }

    /// An `NSDictionary` of references by string key, in the given order.
    mutating func dictionary(_ entries: [(String, PropertyList)], className: String = "NSDictionary") -> PropertyList {
        var keys: [PropertyList] = []
        for (key, _) in entries { keys.append(string(key)) }
        return append(className, superclasses: className == "NSDictionary" ? ["NSObject"] : ["NSDictionary", "NSObject"],
                      ["NS.keys": .array(keys), "NS.objects": .array(entries.map(\.1))])
    }

    private mutating func classReference(_ name: String, superclasses: [String]) -> PropertyList {
        if let index = classes[name] { return .uid(index) }
        objects.append(.dictionary(["$classname": .string(name), "$classes": .array(([name] + superclasses).map(PropertyList.string))]))
        classes[name] = objects.count - 1
        return .uid(objects.count - 1)
    }

    /// The archive with `root` as its `$top.root`.
    func archive(root: PropertyList) -> PropertyList {
        .dictionary(["$archiver": .string("NSKeyedArchiver"), "$version": .integer(100_000),
                     "$top": .dictionary(["root": root]), "$objects": .array(objects)])
    }
}
