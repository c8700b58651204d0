// Writes a service's operations as typed methods: action and function imports (V2 function imports with their HTTP
// method) as methods of the service, bound actions and functions as methods taking the entity or the entity set they
// are bound to. What cannot be typed is listed in the closing comment instead.

import ODataCore
import ODataMetadata

extension SwiftEmitter {
    /// The operation methods of a container, and the operations left out with the reason.
    struct OperationMethods {
        var source = ""
        var notGenerated: [String] = []
    }

    /// One operation to write: the name in the URL, its kind, its parameters (the binding parameter apart).
    private struct Callable {
        var urlName: String
        var description: String
        var kind: String
        var parameters: [CSDLParameter]
        var binding: CSDLParameter?
        /// The return type resolved, and as written (nil: nothing is returned).
        var returns: CSDLTypeReference?
        var returnText: String?
        var httpMethod: String?
        var entitySet: String?
    }

    /// The methods for `container`'s imports and, when `bound` is set, for the document's bound operations.
    /// - Parameters:
    ///   - setStatics: the service's entity sets with the names of their static members.
    ///   - methods: the service's method names so far (operations are added).
    func operationMethods(
        of container: CSDLEntityContainer, bound: Bool, setStatics: [(set: CSDLEntitySet, name: String)],
        methods: inout Naming.Uniquer
    ) -> OperationMethods {
        var result = OperationMethods()
        let ownSchemas = document.schemas.filter { !$0.isReferenced }
        let schemaOperations = ownSchemas.flatMap(\.operations)
        var callables: [Callable] = []
        for item in container.operations where item.kind != "singleton" {
            let what = "\(item.kind) `\(Self.line(item.name))` in `\(Self.line(container.name))`"
            let entitySet = item.entitySet.map { String($0.split(separator: "/").last ?? Substring($0)) }
            if document.version == .v2 || item.imports == nil {
                // A V2 function import carries its own signature.
                callables.append(
                    Callable(
                        urlName: item.name, description: what, kind: item.kind, parameters: item.parameters,
                        returns: item.returnResolved, returnText: item.returnType, httpMethod: item.httpMethod,
                        entitySet: entitySet))
                continue
            }
            let overloads = schemaOperations.filter { $0.name == item.imports && !$0.isBound }
            if overloads.isEmpty { result.notGenerated.append(what + " (imports nothing this document declares)") }
            for overload in overloads {
                callables.append(
                    Callable(
                        urlName: item.name, description: what, kind: item.kind, parameters: overload.parameters,
                        returns: overload.returnResolved, returnText: overload.returnType, entitySet: entitySet))
            }
        }
        if bound {
            for operation in schemaOperations {
                let what = "\(operation.kind) `\(Self.line(operation.name))`"
                guard operation.isBound else { continue }  // an unbound one is called through its import
                guard let binding = operation.parameters.first else {
                    result.notGenerated.append(what + " (bound, without a binding parameter)")
                    continue
                }
                callables.append(
                    Callable(
                        urlName: operation.name, description: what, kind: operation.kind,
                        parameters: Array(operation.parameters.dropFirst()), binding: binding,
                        returns: operation.returnResolved, returnText: operation.returnType))
            }
        }
        var signatures: Set<String> = []
        for callable in callables {
            switch method(for: callable, setStatics: setStatics, methods: &methods, signatures: &signatures) {
            case .success(let source): result.source += source
            case .failure(let reason): result.notGenerated.append(callable.description + " (\(reason.text))")
            }
        }
        return result
    }

    private struct Reason: Error { var text: String }

    private func method(
        for callable: Callable, setStatics: [(set: CSDLEntitySet, name: String)], methods: inout Naming.Uniquer,
        signatures: inout Set<String>
    ) -> Result<String, Reason> {
        var labels = Naming.Uniquer.members(reserving: ["set"])
        var declarations: [String] = []
        var signature: [String] = []
        var bindingExpression: String?
        if let binding = callable.binding {
            guard let resolved = binding.resolved else { return .failure(Reason(text: "its binding parameter's type names nothing")) }
            switch resolved {
            case .structured(let name) where structuredByName[name]?.isEntity == true && closure.included.contains(name):
                let type = swiftType(resolved)
                let label = labels.unique(Naming.lowerCamel(binding.name))
                declarations.append("_ \(Naming.quoted(label)): \(type)")
                signature.append("_:\(type)")
                bindingExpression = ".entity(\(Naming.quoted(label)))"
            case .collection(.structured(let name)) where closure.included.contains(name):
                let sets = setStatics.filter { $0.set.entityType == name }
                guard !sets.isEmpty else { return .failure(Reason(text: "bound to a collection of a type that no entity set of the service has")) }
                let type = swiftType(.structured(name))
                declarations.append("in set: EntitySet<\(type)>" + (sets.count == 1 ? " = Self.\(Naming.quoted(sets[0].name))" : ""))
                signature.append("in:\(type)")
                bindingExpression = ".collection(set)"
            default:
                return .failure(Reason(text: "bound to something other than an entity or entity collection of the generated types"))
            }
        }
        var arguments: [String] = []
        for parameter in callable.parameters {
            guard let resolved = parameter.resolved else { return .failure(Reason(text: "the type of `\(Self.line(parameter.name))` names nothing")) }
            let label = labels.unique(Naming.lowerCamel(parameter.name))
            let required = parameter.nullable == false
            let type = swiftType(resolved) + (required ? "" : "?")
            declarations.append("\(Naming.quoted(label)): \(type)" + (required ? "" : " = nil"))
            signature.append("\(label):\(type)")
            arguments.append("OperationParameter(\(Self.literal(parameter.name)), \(Naming.quoted(label)))")
        }
        var returnType: String?
        if callable.returnText != nil {
            guard let returns = callable.returns else { return .failure(Reason(text: "its return type names nothing")) }
            returnType = swiftType(returns)
        }
        let simple = String(callable.urlName.split(separator: ".").last ?? Substring(callable.urlName))
        var name = Naming.lowerCamel(simple)
        let key = signature.joined(separator: ",")
        if methods.taken.contains(name) && !signatures.contains(where: { $0.hasPrefix(name + "(") }) || signatures.contains("\(name)(\(key))") {
            name = methods.unique(name)
        } else {
            methods.take(name)
        }
        signatures.insert("\(name)(\(key))")

        var call = "OperationCall(\(callable.kind.hasPrefix("action") ? ".action" : ".function"), \(Self.literal(callable.urlName))"
        if !arguments.isEmpty { call += ", parameters: [" + arguments.joined(separator: ", ") + "]" }
        if let bindingExpression { call += ", binding: \(bindingExpression)" }
        if document.version == .v2, let method = callable.httpMethod, method != "GET" { call += ", httpMethod: \(Self.literal(method))" }
        if let entitySet = callable.entitySet { call += ", entitySet: \(Self.literal(entitySet))" }
        call += ")"
        var out = "\n    /// The \(Self.line(callable.kind)) `\(Self.line(callable.urlName))`"
        out += callable.binding == nil ? "" : " (bound)"
        out += callable.returnText.map { ": returns `\(Self.line($0))`.\n" } ?? ".\n"
        out += "    public func \(Naming.quoted(name))(\(declarations.joined(separator: ", "))) async throws"
        if let returnType {
            out += " -> \(returnType) {\n        try await self.dataService.call(\(call), returning: \(returnType).self)\n    }\n"
        } else {
            out += " {\n        try await self.dataService.call(\(call))\n    }\n"
        }
        return .success(out)
    }
}
