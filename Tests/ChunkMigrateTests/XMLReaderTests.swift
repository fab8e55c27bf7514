import Foundation
#if canImport(FoundationXML)
    import FoundationXML
#endif
import Testing
@testable import ChunkMigrate

/// The reader of model and mapping-model XML: the same elements, attributes and text as
/// Foundation's `XMLParser` on well-formed files, a refusal naming the line and column on the
/// rest, and memory that does not grow with the malformed files it has refused.
@Suite("The XML reader")
struct XMLReaderTests {
    /// Events as Foundation's parser gives them, text in a row merged into one event (either
    /// reader may cut text in several).
    final class FoundationEvents: NSObject, XMLParserDelegate {
        var events: [XMLReader.Event] = []
        func parser(
            _ parser: XMLParser, didStartElement element: String, namespaceURI: String?, qualifiedName: String?,
            attributes: [String: String] = [:]
        ) {
            events.append(.start(element, attributes: attributes))
        }
        func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
            events.append(.end(element))
        }
        func parser(_ parser: XMLParser, foundCharacters string: String) { text(string) }
        func parser(_ parser: XMLParser, foundCDATA block: Data) { text(String(decoding: block, as: UTF8.self)) }
        func parser(_ parser: XMLParser, foundIgnorableWhitespace whitespace: String) { text(whitespace) }
        private func text(_ string: String) {
            if case let .text(before)? = events.last {
                events[events.count - 1] = .text(before + string)
            } else {
                events.append(.text(string))
            }
        }
    }

    static func foundation(_ data: Data) -> [XMLReader.Event]? {
        let events = FoundationEvents()
        let parser = XMLParser(data: data)
        parser.delegate = events
        return parser.parse() ? events.events : nil
    }

    static func ours(_ data: Data) throws -> [XMLReader.Event] {
        var reader = try XMLReader(data)
        var events: [XMLReader.Event] = []
        while let event = try reader.next() {
            if case let .text(string) = event, case let .text(before)? = events.last {
                events[events.count - 1] = .text(before + string)
            } else {
                events.append(event)
            }
        }
        return events
    }

    /// Documents with each construct the reader reads, all well-formed.
    static let documents: [String] = [
        #"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\#n<model type="m"><entity name="A" syncable="YES"/></model>"#,
        #"<?xml version='1.0' encoding='utf-8'?><a x='1' y = "2"  >text</a>"#,
        "<a>\r\nline\rend\r\n</a>",
        "<a v=\"one\ttwo\r\nthree\nfour&#10;five&#x9;six\"/>",
        #"<a>&lt;&gt;&amp;&apos;&quot; &#38; &#x26; &#233; &#x1F600; &#000000065; &#x0000000041;</a>"#,
        #"<a p="&lt;b&gt; &quot;q&quot; &amp; 'x'" q='"'/>"#,
        "<!-- before --><a><!-- inside --><b/><![CDATA[<not> & markup]]></a><!-- after -->\n",
        #"<!DOCTYPE database SYSTEM "file:///System/Library/DTDs/CoreData.dtd">"#
            + "\n<database><object id=\"z1\" type=\"T\"><attribute name=\"n\" type=\"string\">v</attribute></object></database>",
        "<?xml version=\"1.0\"?><?app data?><a><?inside it?></a>",
        "\u{FEFF}<a>é ü 漢字</a>",
        "<a:b xmlns:a=\"urn:x\"><a:c a:d=\"1\"/></a:b>",
        "<a>\(String(repeating: "<b>", count: 2_000))\(String(repeating: "</b>", count: 2_000))</a>",
    ]

    @Test("on well-formed documents with every construct it reads, the events are Foundation's XMLParser's", arguments: documents)
    func sameAsFoundation(_ document: String) throws {
        let data = Data(document.utf8)
        let theirs = try #require(Self.foundation(data), "Foundation refuses \(document)")
        let ours = try Self.ours(data)
        #expect(ours == theirs, "ours: \(ours)\ntheirs: \(theirs)")
    }

    @Test(
        "on every model contents and mapping model XML of the fixtures, the events are Foundation's XMLParser's",
        .enabled(if: CoreDataStoreTests.fixture("SOURCES.md") != nil, "shared/fixtures/coredata is absent"))
    func fixturesSameAsFoundation() throws {
        let files = (FileManager.default.enumerator(atPath: CoreDataStoreTests.fixtures.path)?.allObjects as? [String] ?? [])
            .filter { ($0 as NSString).lastPathComponent == "contents" || $0.hasSuffix(".xcmapping.xml") || $0.hasSuffix("/xcmapping.xml") }
        #expect(files.count >= 100, "\(files.count) files")
        for file in files {
            let data = try Data(contentsOf: CoreDataStoreTests.fixtures.appendingPathComponent(file))
            let theirs = try #require(Self.foundation(data), "Foundation refuses \(file)")
            #expect(try Self.ours(data) == theirs, "\(file)")
        }
    }

    @Test(
        "what is not well-formed is refused naming the line and the column",
        arguments: [
            ("<a>", "element <a> is not closed at the end of the file", 1, 4),
            (
                #"<!DOCTYPE a [ <!ATTLIST a x CDATA "1"> ]><a/>"#, "a document type declaration with an internal subset, which is not read",
                1, 13
            ),
            ("<a></b>", "end tag </b> where <a> is open", 1, 4),
            ("<a/><b/>", "a second root element", 1, 5),
            ("<a x='1' x='2'/>", "attribute x given twice in <a>", 1, 10),
            ("<a x=1/>", "the value of attribute x of <a> is not quoted", 1, 6),
            ("<a x='<'/>", "a '<' in the value of attribute x of <a>", 1, 7),
            ("<a>\n  &nbsp;</a>", "reference &nbsp; to an entity that is not declared", 2, 3),
            ("<a>&#0;</a>", "character reference &#0; is not to a character XML allows", 1, 4),
            ("<a>&#xD800;</a>", "character reference &#xD800; is not to a character XML allows", 1, 4),
            ("<a>& b</a>", "an '&' that starts no reference", 1, 4),
            ("text<a/>", "text outside the root element", 1, 1),
            ("<a/>\n\n<?xml version=\"1.0\"?>", "an XML declaration after the start of the file", 3, 1),
            ("<?xml version=\"1.0\" encoding=\"UTF-16\"?><a/>", "the XML declaration names encoding UTF-16, not UTF-8", 1, 1),
            ("<a>\u{1}</a>", "control character 1 is not allowed in XML", 1, 4),
            ("<!-- only a comment -->", "no root element", 1, 24),
            ("<a><!-- open </a>", "a comment that does not end", 1, 4),
            ("<a b='1'c='2'/>", "no space before an attribute of <a>", 1, 9),
            ("<1a/>", "an element name expected", 1, 2),
            ("<!ENTITY x 'y'><a/>", "markup that is not a comment, a CDATA section or a document type declaration", 1, 1),
            ("<a><!-- a -- b --></a>", "'--' inside a comment", 1, 11),
            ("<a>x ]]> y</a>", "']]>' in character data", 1, 6),
            ("<a>&#+65;</a>", "character reference &#+65; is not to a character XML allows", 1, 4),
            ("<a>&#x+41;</a>", "character reference &#x+41; is not to a character XML allows", 1, 4),
            ("<a><?pi=x?></a>", "no space after the processing instruction's target pi", 1, 8),
        ])
    func refusals(_ document: String, _ message: String, _ line: Int, _ column: Int) throws {
        let error = #expect(throws: XMLReader.Malformed.self) { try Self.ours(Data(document.utf8)) }
        #expect(error?.message == message && error?.line == line && error?.column == column, "\(String(describing: error))")
    }

    @Test("bytes that are not UTF-8 are refused at the first of them")
    func notUTF8() throws {
        let error = #expect(throws: XMLReader.Malformed.self) {
            try Self.ours(Data([0x3C, 0x61, 0x3E, 0x0A, 0xC3, 0xA9, 0xFF, 0x3C, 0x2F, 0x61, 0x3E]))
        }
        #expect(error?.message == "the file is not UTF-8 text" && error?.line == 2 && error?.column == 2, "\(String(describing: error))")
        // Overlong forms, surrogates, past U+10FFFF, cut short, stray continuation bytes: refused
        // where Foundation's decoding refuses them, read where it reads them.
        let sequences: [[UInt8]] = [
            [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF], [0xE0, 0xA0, 0x80],
            [0xED, 0x9F, 0xBF], [0xED, 0xA0, 0x80], [0xEF, 0xBF, 0xBD], [0xF0, 0x8F, 0xBF, 0xBF],
            [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80],
            [0xE2, 0x82], [0x80], [0xBF, 0x80], [0xC2, 0xA9], [0xF0, 0x9F, 0x98, 0x80], [0xF0, 0x9F, 0x98],
        ]
        for sequence in sequences {
            let bytes = Array("<a>".utf8) + sequence + Array("</a>".utf8)
            let foundation = String(data: Data(bytes), encoding: .utf8) != nil
            let read = (try? Self.ours(Data(bytes))) != nil
            #expect(read == foundation, "\(sequence.map { String($0, radix: 16) })")
        }
    }

    @Test("a model or mapping model that is not well-formed is refused naming the file, the line and the column")
    func refusedNamingTheFile() throws {
        let model = #expect(throws: MigrationError.self) {
            try CoreDataModel(xml: Data("<model>\n<entity name=\"A\">\n</model>".utf8), file: "Model.xcdatamodel/contents")
        }
        #expect(
            model?.file == "Model.xcdatamodel/contents"
                && model?.message == "not a Core Data model's contents XML: line 3, column 1: end tag </model> where <entity> is open",
            "\(String(describing: model))")
        let folder = try TemporaryFolder()
        let url = folder.path("V1toV2.xcmapping.xml")
        try Data("<database><object type=\"XDDEVMAPPINGMODEL\" id=\"z1\">".utf8).write(to: url)
        let mapping = #expect(throws: MigrationError.self) { try CoreDataMappingModelFile.read(contentsOf: url) }
        #expect(
            mapping?.file == url.path && mapping?.message.hasPrefix("not a mapping model's xcmapping.xml: line 1, column ") == true,
            "\(String(describing: mapping))")
    }

    #if os(Linux) || os(macOS)
        /// Reading the malformed model CI's fuzzing stopped on (FoundationXML kept each of its errors)
        /// and a malformed mapping model, 100,000 times each, in a process of its own so that no
        /// other test's memory is counted: resident memory after the first 10,000 readings and after
        /// the last differ by at most 10 MB.
        @Test("a malformed model and a malformed mapping model read 100,000 times each: resident memory stays within 10 MB")
        func malformedInputsKeepNothing() async throws {
            let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                let model = try FuzzFindingsTests.finding("model-xml-error-path.xml")
                let folder = try TemporaryFolder()
                let mapping = folder.path("Broken.xcmapping.xml")
                try Data(
                    #"<?xml version="1.0" encoding="UTF-8" standalone="no"?><!DOCTYPE database SYSTEM "file:///System/Library/DTDs/CoreData.dtd"><database><object type="XDDEVMAPPINGMODEL" id="z102"><attribute name="sourcemodelpath" type="string">A.xcdatamodel</attribute><relationship name="entitymappings" type="0/0" idrefs="z1 z2"></relationship></object><object type="XDDEVENTITYMAPPING" id="z1"><attribute name="sourcename" type="string">E</attribute></objec>"#
                        .utf8
                )
                .write(to: mapping)
                var baseline = 0
                for round in 1...100_000 {
                    // Each must be refused; one that reads would not be the input meant.
                    if (try? CoreDataModel(xml: model, file: "contents")) != nil { exit(2) }
                    if (try? CoreDataMappingModelFile.read(contentsOf: mapping)) != nil { exit(2) }
                    if round == 10_000 {
                        guard let resident = residentBytes() else { exit(3) }
                        baseline = resident
                    }
                }
                guard let resident = residentBytes() else { exit(3) }
                // The parent judges: a failed exit test gives back no output.
                print("resident memory grew by \(resident - baseline) bytes from reading 10,000 to reading 100,000")
            }
            let output = String(decoding: result?.standardOutputContent ?? [], as: UTF8.self)
            let growth = output.split(separator: " ").compactMap { Int($0) }.first
            #expect(growth != nil && growth! <= 10 << 20, "\(output)")
        }
    #endif
}

/// The process's resident memory in bytes, or `nil` where it cannot be read.
func residentBytes() -> Int? {
    #if os(Linux)
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
            let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    #elseif canImport(Darwin)
        var info = mach_task_basic_info()
        var count = mach_msg_type_number_t(MemoryLayout<mach_task_basic_info>.size / MemoryLayout<natural_t>.size)
        let result = withUnsafeMutablePointer(to: &info) {
            $0.withMemoryRebound(to: integer_t.self, capacity: Int(count)) {
                task_info(mach_task_self_, task_flavor_t(MACH_TASK_BASIC_INFO), $0, &count)
            }
        }
        return result == KERN_SUCCESS ? Int(info.resident_size) : nil
    #else
        return nil
    #endif
}
