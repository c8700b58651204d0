#!/usr/bin/env python3
"""Generates Events.json and ../Fixture.metadata.xml (Northwind's CSDL extended with Events).

Run from Fixtures/Data: `python3 events/generate.py`. The output is committed; the fixture
server reads it as a resource. The Northwind files in northwind/ stay untouched.
"""
import json, uuid

ns = uuid.UUID('6ba7b811-9dad-11d1-80b4-00c04fd430c8')
custs = ['ALFKI', 'ALFKI', 'ALFKI', 'ANATR', 'ANTON', 'BERGS', 'BERGS', 'BLAUS',
         'BONAP', 'CHOPS', 'DRACD', 'FRANK', 'LAZYK', 'QUICK', 'WOLZA', 'ALFKI']
kinds = ['call', 'visit', 'email', 'complaint']
events = []
for i, c in enumerate(custs):
    events.append({
        "EventID": str(uuid.uuid5(ns, f"fixture-event-{i + 1}")),
        "CustomerID": c,
        "Title": f"{kinds[i % 4].capitalize()} #{i + 1} with {c}",
        "Kind": kinds[i % 4],
        "OccurredAt": f"2026-0{1 + i % 9}-{10 + i:02d}T{8 + i % 10:02d}:30:00Z",
        "Severity": (i * 7) % 5,
    })
with open('events/Events.json', 'w') as f:
    json.dump({"@odata.context": "$metadata#Events", "value": events}, f, indent=1, ensure_ascii=False)
    f.write('\n')

src = open('northwind/Northwind.metadata.v4.xml').read()

def replace_once(text, old, new):
    assert text.count(old) == 1, old
    return text.replace(old, new)

event_type = '''      <EntityType Name="Event">
        <Key>
          <PropertyRef Name="EventID" />
        </Key>
        <Property Name="EventID" Type="Edm.Guid" Nullable="false" />
        <Property Name="CustomerID" Type="Edm.String" MaxLength="5" />
        <Property Name="Title" Type="Edm.String" Nullable="false" MaxLength="80" />
        <Property Name="Kind" Type="Edm.String" MaxLength="20" />
        <Property Name="OccurredAt" Type="Edm.DateTimeOffset" />
        <Property Name="Severity" Type="Edm.Int32" />
        <NavigationProperty Name="Customer" Type="NorthwindModel.Customer" Partner="Events">
          <ReferentialConstraint Property="CustomerID" ReferencedProperty="CustomerID" />
        </NavigationProperty>
      </EntityType>
'''
# The entity type goes into the NorthwindModel schema (the first one).
first_schema_end = src.index('    </Schema>')
src = src[:first_schema_end] + event_type + src[first_schema_end:]
src = replace_once(src,
    '        <NavigationProperty Name="Orders" Type="Collection(NorthwindModel.Order)" Partner="Customer" />\n'
    '        <NavigationProperty Name="CustomerDemographics"',
    '        <NavigationProperty Name="Orders" Type="Collection(NorthwindModel.Order)" Partner="Customer" />\n'
    '        <NavigationProperty Name="Events" Type="Collection(NorthwindModel.Event)" Partner="Customer" />\n'
    '        <NavigationProperty Name="CustomerDemographics"')
src = replace_once(src,
    '          <NavigationPropertyBinding Path="Orders" Target="Orders" />\n'
    '        </EntitySet>\n'
    '        <EntitySet Name="Employees"',
    '          <NavigationPropertyBinding Path="Orders" Target="Orders" />\n'
    '          <NavigationPropertyBinding Path="Events" Target="Events" />\n'
    '        </EntitySet>\n'
    '        <EntitySet Name="Employees"')
anchor = '        <EntitySet Name="Alphabetical_list_of_products"'
src = replace_once(src, anchor,
    '        <EntitySet Name="Events" EntityType="NorthwindModel.Event">\n'
    '          <NavigationPropertyBinding Path="Customer" Target="Customers" />\n'
    '        </EntitySet>\n' + anchor)
with open('Fixture.metadata.xml', 'w') as f:
    f.write(src)
