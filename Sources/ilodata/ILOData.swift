import ArgumentParser
import Foundation
import HTTPTypes
import ODataCore
import ODataSession
import OfflineStore
import TechnicalCache

#if canImport(Glibc)
import Glibc
#endif

/// `ilodata`: opens an offline store and runs OData requests against it, one-shot or interactively.
@main
struct ILOData: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ilodata",
        abstract: "Run OData requests against an offline store.",
        discussion: """
            Opens the offline store at --store-path/--store-name (creating it from --service-root and
            --defining-query on the first run), then runs --command, or reads commands from standard
            input when no command is given. The progress of the initial download, of a download and of an
            upload (done of the known total, rate, elapsed time) goes to standard error: a live bar on a
            terminal, plain lines otherwise; --quiet turns it off. Commands:
              get <path?query>           read locally ($filter, $orderby, $select, $expand, $top, $skip, $count)
              post <path> <json>         create an entity
              patch <path> <json>        update an entity (merge)
              put <path> <json>          replace an entity
              delete <path>              delete an entity
              queue                      show the request queue
              pending                    whether requests wait for an upload
              undo                       cancel every pending request (restores the downloaded state)
              upload                     send the queued requests to the back end, in order (exits non-zero
                                         when the back end cannot be reached: the rest stays queued)
              sync [SECONDS]             upload, then download, by itself: at once, after changes, every
                                         SECONDS (default 60) and after an outage; prints its states until
                                         interrupted (Ctrl-C)
              plan                       list exactly what the next upload would send (dry run)
              download [QUERY…]          refresh the store from the back end (delta links where known)
              errors                     show the ErrorArchive (failed uploaded requests)
              json on|off                print raw JSON instead of tables
              help, quit
            """
    )

    @Option(name: .long, help: "The directory that holds stores.")
    var storePath: String

    @Option(name: .long, help: "The store's name.")
    var storeName: String = "offline"

    @Option(name: .long, help: "The store's encryption key (else the default key file next to the store).")
    var key: String?

    @Flag(name: .long, help: "Create or open the store without encryption.")
    var noEncryption = false

    @Option(name: .long, help: "PBKDF2 rounds for a new store's key (the default is 600000).")
    var kdfRounds: Int?

    @Option(name: .long, help: "The service root; needed to create a store.")
    var serviceRoot: String?

    @Option(name: .long, parsing: .singleValue, help: "A defining query as name=query, for a new store (repeatable).")
    var definingQuery: [String] = []

    @Option(name: .long, parsing: .singleValue, help: ArgumentHelp(
        "Secondary indexes of a defining query as name=Property[,Property…] (repeatable); the query must be given with --defining-query.",
        discussion: "On an existing store, give the defining query again with its indexes: open() builds the missing ones."))
    var index: [String] = []

    @Option(name: .long, help: "Entities per page of a local read (0: no paging).")
    var pageSize: Int = 0

    @Option(name: .long, help: "Run this one command and exit.")
    var command: String?

    @Flag(name: .long, help: "Print raw JSON instead of tables.")
    var json = false

    @Option(name: .long, help: "Upload in $batch requests of up to N change sets (default: one request at a time).")
    var batch: Int?

    @Option(name: .long, help: "Authenticate as this user (HTTP basic); the password is read from the environment variable ILODATA_PASSWORD, never from the command line.")
    var user: String?

    @Option(name: .long, help: "The SAP client (sap-client) of every request.")
    var sapClient: String?

    @Option(name: .long, help: "The logon language (sap-language) of every request.")
    var sapLanguage: String?

    @Flag(name: .long, help: "Send updates as MERGE (OData V2 producers that refuse PATCH).")
    var merge = false

    @Flag(name: .long, help: "Do not fetch CSRF tokens (a back end without CSRF protection).")
    var noCsrf = false

    @Flag(name: .long, help: "Print no progress of downloads and uploads on standard error.")
    var quiet = false

    mutating func run() async throws {
        var parameters = OfflineODataParameters(storeName: storeName, storePath: storePath, storeEncryptionKey: key,
                                                disableDefaultEncryptionKey: noEncryption, pageSize: pageSize)
        if let kdfRounds { parameters.keyDerivation = .pbkdf2(rounds: kdfRounds) }
        // The store's work is this tool's main work: at the normal priority, not behind every other process's.
        parameters.backgroundExecutor = BackgroundExecutor(threads: 2 * ProcessInfo.processInfo.activeProcessorCount, priority: .nice(0))
        if let user {
            guard let password = ProcessInfo.processInfo.environment["ILODATA_PASSWORD"] else {
                throw ValidationError("--user needs the password in the environment variable ILODATA_PASSWORD")
            }
            parameters.session.authentication = BasicAuthentication(user: user, password: password)
        }
        parameters.session.sapClient = sapClient
        parameters.session.sapLanguage = sapLanguage
        if merge { parameters.session.updateMethod = .merge }
        if noCsrf { parameters.session.csrf = .off }
        if let batch {
            guard batch >= 1 else { throw ValidationError("--batch needs at least 1, got \(batch)") }
            parameters.uploadMode = .batch(maxRequestsPerBatch: batch)
        }
        let root: String
        if let serviceRoot {
            root = serviceRoot
        } else if let stored = try OfflineODataProvider.storedServiceRoot(parameters: parameters) {
            root = stored
        } else {
            throw ValidationError("no store at \(storePath)/\(storeName); give --service-root and --defining-query to create one")
        }
        let provider = try OfflineODataProvider(serviceRoot: root, parameters: parameters,
                                                delegate: quiet ? nil : ProgressPrinter.standardError())
        let indexes = try Self.indexes(index, definingQueries: definingQuery)
        for item in definingQuery {
            guard let equals = item.firstIndex(of: "=") else {
                throw ValidationError("--defining-query must be name=query, got '\(item)'")
            }
            let name = String(item[..<equals])
            try await provider.add(definingQuery: OfflineODataDefiningQuery(name: name, query: String(item[item.index(after: equals)...]),
                                                                            indexes: indexes[name] ?? []))
        }
        try await provider.open()
        var session = Session(provider: provider, json: json)
        if let command {
            let ok = await session.run(command)
            await provider.close()
            if !ok { throw ExitCode(1) }
            return
        }
        let interactive = isatty(STDIN_FILENO) == 1
        while true {
            if interactive {
                say("ilodata> ", terminator: "")
            }
            guard let line = readLine() else { break }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed == "quit" || trimmed == "exit" { break }
            if trimmed.isEmpty { continue }
            _ = await session.run(trimmed)
        }
        await provider.close()
    }
}

extension ILOData {
    /// The `--index` options by defining query name, each property once, in the order given.
    ///
    /// - Throws: `ValidationError` for an option that is not `name=Property[,Property…]` or names a defining query
    ///   not given with `--defining-query`.
    static func indexes(_ options: [String], definingQueries: [String]) throws -> [String: [String]] {
        let names = Set(definingQueries.map { String($0.prefix { $0 != "=" }) })
        var result: [String: [String]] = [:]
        for option in options {
            let parts = option.split(separator: "=", maxSplits: 1).map(String.init)
            let properties = parts.count == 2 ? parts[1].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } : []
            guard parts.count == 2, !properties.isEmpty else {
                throw ValidationError("--index must be name=Property[,Property…], got '\(option)'")
            }
            guard names.contains(parts[0]) else {
                throw ValidationError("--index names the defining query '\(parts[0])', which no --defining-query gives")
            }
            for property in properties where !(result[parts[0]] ?? []).contains(property) { result[parts[0], default: []].append(property) }
        }
        return result
    }
}

/// Runs the commands of one session.
struct Session {
    let provider: OfflineODataProvider
    var json: Bool

    /// Runs one command line; returns whether it succeeded.
    mutating func run(_ line: String) async -> Bool {
        let verb = String(line.prefix { $0 != " " }).lowercased()
        let rest = String(line.dropFirst(verb.count)).trimmingCharacters(in: .whitespaces)
        do {
            switch verb {
            case "get":
                try show(try await provider.execute(try Self.request(.get, rest)))
            case "post", "patch", "put":
                guard let brace = rest.firstIndex(of: "{") else { throw UsageError("\(verb) needs a path and a JSON body") }
                let path = rest[..<brace].trimmingCharacters(in: .whitespaces)
                var request = try Self.request(verb == "post" ? .post : (verb == "put" ? .put : .patch), path)
                request.body = Data(rest[brace...].utf8)
                let response = try await provider.execute(request)
                if verb == "post" {
                    let created = try JSON.parse(response.payload)
                    say("created \(created["@odata.id"]?.stringValue ?? "")")
                    if json { say(JSON.string(created)) }
                } else {
                    say("updated \(path)")
                }
            case "delete":
                _ = try await provider.execute(try Self.request(.delete, rest))
                say("deleted \(rest)")
            case "queue":
                let entries = try await provider.pendingRequests().map(\.properties)
                if json {
                    say(JSON.string(.array(entries.map(JSONValue.object))))
                } else {
                    say(Table.render(entries, columns: ["RequestID", "Method", "URL", "Body", "CustomTag", "Status"]))
                }
            case "pending":
                say(try await provider.hasPendingUpload ? "pending requests: yes" : "pending requests: no")
            case "upload":
                return try await upload()
            case "sync":
                try await sync(rest)
            case "download":
                try await provider.download(definingQueries: rest.isEmpty ? nil : rest.split(separator: " ").map(String.init))
                say("downloaded")
            case "plan":
                for planned in try await provider.pendingUpload() {
                    say("\(planned.requestID) \(planned.method) \(planned.url)\(planned.body.map { " " + $0 } ?? "")")
                }
            case "errors":
                try show(try await provider.execute(try Self.request(.get, "ErrorArchive")))
            case "undo":
                try await provider.cancelPendingRequests()
                say("cancelled every pending request")
            case "json":
                json = rest != "off"
                say("json output \(json ? "on" : "off")")
            case "help":
                say(ILOData.configuration.discussion)
            default:
                throw UsageError("unknown command '\(verb)'; try help")
            }
            return true
        } catch {
            say("error: \(error)")
            return false
        }
    }

    private func show(_ response: ODataResponse) throws {
        if response.statusCode == 204 {
            say("(no content)")
            return
        }
        guard let value = try? JSON.parse(response.payload) else {
            say(String(decoding: response.payload, as: UTF8.self))
            return
        }
        if json {
            say(JSON.string(value))
            return
        }
        if let items = value["value"]?.arrayValue {
            say(Table.render(items.compactMap(\.objectValue)))
            var footer = "\(items.count) entities"
            if let count = value["@odata.count"]?.intValue { footer += " of \(count)" }
            say(footer)
            if let next = value["@odata.nextLink"]?.stringValue { say("next: \(next)") }
        } else if let object = value.objectValue {
            say(Table.render([object]))
        } else {
            say(JSON.string(value))  // a count (`…/$count`) or another single value
        }
    }

    /// A request from a typed path with a readable query (spaces and quotes allowed); a value may also be
    /// percent-encoded (``PercentDecoding``: `%20` is a space, a `+` stays a plus).
    /// - Throws: ``UsageError`` for an empty path, or a value with a `%` that starts no `%XX` (a literal `%` is `%25`).
    static func request(_ method: HTTPRequestMethod, _ text: String) throws -> ODataRequest {
        guard !text.isEmpty else { throw UsageError("a path is needed") }
        let pieces = text.split(separator: "?", maxSplits: 1)
        var options: [QueryOption] = []
        if pieces.count == 2 {
            for piece in pieces[1].split(separator: "&") {
                let pair = piece.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(pair[0])
                let value: String
                do { value = pair.count == 2 ? try PercentDecoding.decodeString(String(pair[1])) : "" } catch {
                    throw UsageError("the value of '\(name)' is malformed: \(error.message) (a literal % is written %25)")
                }
                options.append(.encoded(PercentEncoding.encodeQueryName(name) + "=" + PercentEncoding.encodeQueryValue(value)))
            }
        }
        return ODataRequest(method: method, resourcePath: String(pieces[0]), queryOptions: options)
    }
}

typealias HTTPRequestMethod = HTTPRequest.Method

struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Plain-text tables.
enum Table {
    static func render(_ rows: [JSONObject], columns fixed: [String]? = nil) -> String {
        var columns = fixed ?? []
        if fixed == nil {
            for row in rows { for name in row.keys where !name.contains("@") && !columns.contains(name) { columns.append(name) } }
        }
        guard !columns.isEmpty else { return "(empty)" }
        let cells = rows.map { row in columns.map { cell(row[$0]) } }
        let widths = columns.indices.map { index in min(40, max(columns[index].count, cells.map { $0[index].count }.max() ?? 0)) }
        func line(_ values: [String]) -> String {
            zip(values, widths).map { value, width in
                let clipped = value.count > width ? String(value.prefix(width - 1)) + "…" : value
                return clipped.padding(toLength: width, withPad: " ", startingAt: 0)
            }.joined(separator: " | ")
        }
        var lines = [line(columns), widths.map { String(repeating: "-", count: $0) }.joined(separator: "-+-")]
        lines += cells.map(line)
        return lines.joined(separator: "\n")
    }

    static func cell(_ value: JSONValue?) -> String {
        switch value {
        case nil, .null?: return ""
        case .string(let text)?: return text
        case .int(let number)?: return String(number)
        case .double(let number)?: return String(number)
        case .bool(let flag)?: return flag ? "true" : "false"
        case .array(let items)?: return "[\(items.count)]"
        case .object?: return "{…}"
        }
    }
}


/// Writes to standard output at once (unbuffered), so a reader sees each line when it is done.
func say(_ text: String?, terminator: String = "\n") {
    FileHandle.standardOutput.write(Data(((text ?? "") + terminator).utf8))
}
