//
// Drives edgesdk's Renode peripherals outside Renode, over the stand-ins in RenodeStandins.cs, so the
// tests can run them for real (Mono) and compare them with the built-in emulator's path.
//
//   mono harness.exe FLASH_BASE FLASH_SIZE SRAM_BASE SRAM_SIZE < script
//
// builds a stand-in machine with two memories on its system bus, an Edgesdk.Npu1 and an Edgesdk.Dsp1 wired
// to them and an Edgesdk.SiFiveTestFinisher, then runs one command per script line (numbers in hex or
// decimal):
//
//   load ADDRESS PATH            copy a file's bytes into memory at ADDRESS
//   write OFFSET VALUE           NPU register write (what a CPU store to npu0 + OFFSET does)
//   read OFFSET                  NPU register read; prints the value as 0x%08X
//   dsp-write OFFSET VALUE       the same for the DSP
//   dsp-read OFFSET
//   irq                          prints the NPU IRQ line: 1 or 0
//   reset                        the NPU's Reset() (machine reset)
//   save ADDRESS LENGTH PATH     write LENGTH bytes of memory at ADDRESS to a file
//   finish VALUE                 write VALUE to the exit device (offset 0)
//   exitcode                     prints the exit device's ExitCode
//   pauses                       prints how often a peripheral paused the emulation
//   serializable                 prints, per peripheral type, "TYPE ok" or each field a snapshot cannot hold
//   snapshot                     saves the peripherals as Renode's serializer (Migrant) does and carries on with
//                                the restored copies; prints "snapshot ok" or why it failed
//   read-original OFFSET         an NPU register of the peripheral as it was before the last snapshot
//   log                          prints the log entries so far, one per line, then "end"
//
using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Reflection;
using System.Runtime.Serialization;
using System.Threading;

using Antmicro.Migrant;
using Antmicro.Migrant.Hooks;

using Antmicro.Renode.Core;
using Antmicro.Renode.Logging;
using Antmicro.Renode.Peripherals.Bus;
using Antmicro.Renode.Peripherals.CPU;
using Antmicro.Renode.Peripherals.Edgesdk;

namespace Edgesdk.RenodeCheck
{
    public static class PeripheralHarness
    {
        public static int Main(string[] args)
        {
            if(args.Length != 4)
            {
                Console.Error.WriteLine("usage: harness.exe FLASH_BASE FLASH_SIZE SRAM_BASE SRAM_SIZE < script");
                return 2;
            }
            var flashBase = Number(args[0]);
            var flashSize = Number(args[1]);
            var sramBase = Number(args[2]);
            var sramSize = Number(args[3]);
            var bus = new MemoryBus();
            bus.AddMemory(flashBase, flashSize);
            bus.AddMemory(sramBase, sramSize);
            var machine = new HarnessMachine(bus);
            var npu = new Npu1(machine, flashBase, flashSize, sramBase, sramSize);
            var dsp = new Dsp1(machine, flashBase, flashSize, sramBase, sramSize);
            var finisher = new SiFiveTestFinisher(machine);
            var originals = new List<object>();

            string line;
            while((line = Console.ReadLine()) != null)
            {
                var words = line.Split(new[] { ' ' }, StringSplitOptions.RemoveEmptyEntries);
                if(words.Length == 0)
                {
                    continue;
                }
                switch(words[0])
                {
                case "load":
                    bus.WriteBytes(File.ReadAllBytes(words[2]), Number(words[1]), onlyMemory: true);
                    break;
                case "write":
                case "dsp-write":
                    Registers(words[0], npu, dsp).WriteDoubleWord((long)Number(words[1]), (uint)Number(words[2]));
                    break;
                case "read":
                case "dsp-read":
                    Console.WriteLine("0x{0:X8}", Registers(words[0], npu, dsp).ReadDoubleWord((long)Number(words[1])));
                    break;
                case "read-original":
                    Console.WriteLine("0x{0:X8}", ((Npu1)originals[0]).ReadDoubleWord((long)Number(words[1])));
                    break;
                case "serializable":
                    foreach(var type in new[] { typeof(Npu1), typeof(Dsp1), typeof(SiFiveTestFinisher) })
                    {
                        var problems = Snapshot.Problems(type);
                        Console.WriteLine(problems.Count == 0 ? type.Name + " ok" : string.Join("\n", problems));
                    }
                    break;
                case "snapshot":
                    try
                    {
                        var copies = new object[] { Snapshot.SaveAndRestore(npu), Snapshot.SaveAndRestore(dsp),
                                                    Snapshot.SaveAndRestore(finisher) };
                        originals.Clear();
                        originals.AddRange(new object[] { npu, dsp, finisher });
                        npu = (Npu1)copies[0];
                        dsp = (Dsp1)copies[1];
                        finisher = (SiFiveTestFinisher)copies[2];
                        Console.WriteLine("snapshot ok");
                    }
                    catch(Exception e)
                    {
                        Console.WriteLine("snapshot failed: " + (e.InnerException ?? e).Message);
                    }
                    break;
                case "irq":
                    Console.WriteLine(npu.IRQ.IsSet ? "1" : "0");
                    break;
                case "reset":
                    npu.Reset();
                    break;
                case "save":
                    File.WriteAllBytes(words[3], bus.ReadBytes(Number(words[1]), (int)Number(words[2]), onlyMemory: true));
                    break;
                case "finish":
                    finisher.WriteDoubleWord(0, (uint)Number(words[1]));
                    break;
                case "exitcode":
                    Console.WriteLine(finisher.ExitCode);
                    break;
                case "pauses":
                    Console.WriteLine(machine.Pauses);
                    break;
                case "log":
                    foreach(var entry in Logger.Entries)
                    {
                        Console.WriteLine(entry);
                    }
                    Console.WriteLine("end");
                    break;
                default:
                    Console.Error.WriteLine("unknown command: " + line);
                    return 2;
                }
            }
            npu.Dispose();
            dsp.Dispose();
            foreach(var original in originals.OfType<IDisposable>())
            {
                original.Dispose();
            }
            return 0;
        }

        // The peripheral a register command addresses: "dsp-..." the DSP, the others the NPU.
        private static IDoubleWordPeripheral Registers(string command, Npu1 npu, Dsp1 dsp)
        {
            return command.StartsWith("dsp-", StringComparison.Ordinal) ? (IDoubleWordPeripheral)dsp : npu;
        }

        private static ulong Number(string text)
        {
            return text.StartsWith("0x", StringComparison.OrdinalIgnoreCase)
                ? ulong.Parse(text.Substring(2), NumberStyles.HexNumber, CultureInfo.InvariantCulture)
                : ulong.Parse(text, CultureInfo.InvariantCulture);
        }
    }

    // What Renode's serializer, Migrant (antmicro/Migrant, lib/Migrant in renode/renode), does to a peripheral
    // when Renode saves and loads a snapshot, as far as a peripheral can observe it: the [PreSerialization]
    // hooks run, every field that is not [Transient] is written (a native pointer there is refused with
    // Migrant's message, ObjectWriter.CheckLegality), the [PostSerialization] hooks run on the saved object;
    // loading creates the object without running a constructor, sets the saved fields (transient ones keep
    // their defaults) and runs its [PostDeserialization] hooks. Referenced objects (the bus, the machine) are
    // shared here instead of copied; arrays are copied.
    internal static class Snapshot
    {
        public static object SaveAndRestore(object original)
        {
            var type = original.GetType();
            Invoke<PreSerializationAttribute>(original);
            var problems = Problems(type);
            if(problems.Count > 0)
            {
                throw new InvalidOperationException("Pointer or ThreadLocal or SpinLock encountered during serialization: "
                                                    + string.Join("; ", problems));
            }
            var copy = FormatterServices.GetUninitializedObject(type);
            foreach(var field in Fields(type).Where(f => !IsTransient(f)))
            {
                var value = field.GetValue(original);
                var array = value as Array;
                field.SetValue(copy, array != null ? array.Clone() : value);
            }
            Invoke<PostSerializationAttribute>(original);
            Invoke<PostDeserializationAttribute>(copy);
            return copy;
        }

        // Every field a snapshot of `type` would have to hold but cannot: a native pointer (Migrant refuses
        // IntPtr, pointers, ThreadLocal and SpinLock) or a delegate (code the native model calls back) that is not
        // [Transient], in the type itself and in the structs it holds.
        public static List<string> Problems(Type type)
        {
            var problems = new List<string>();
            Collect(type, type.Name, problems);
            return problems;
        }

        private static void Collect(Type type, string path, List<string> problems)
        {
            foreach(var field in Fields(type).Where(f => !IsTransient(f)))
            {
                var fieldType = field.FieldType;
                var where = path + "." + field.Name;
                if(IsIllegal(fieldType))
                {
                    problems.Add(where + ": " + fieldType.Name + " is a native pointer; mark it [Transient] and recreate it after loading");
                }
                else if(typeof(Delegate).IsAssignableFrom(fieldType))
                {
                    problems.Add(where + ": " + fieldType.Name + " is a delegate; mark it [Transient] and recreate it after loading");
                }
                else if(fieldType.IsValueType && !fieldType.IsPrimitive && !fieldType.IsEnum)
                {
                    Collect(fieldType, where, problems);
                }
            }
        }

        private static bool IsIllegal(Type type)
        {
            return type.IsPointer || type == typeof(IntPtr) || type == typeof(UIntPtr) || type == typeof(Pointer)
                || (type.IsGenericType && type.GetGenericTypeDefinition() == typeof(ThreadLocal<>)) || type == typeof(SpinLock);
        }

        private static bool IsTransient(FieldInfo field)
        {
            return field.IsDefined(typeof(TransientAttribute), false) || field.FieldType.IsDefined(typeof(TransientAttribute), false);
        }

        private static IEnumerable<FieldInfo> Fields(Type type)
        {
            for(var t = type; t != null && t != typeof(object); t = t.BaseType)
            {
                foreach(var field in t.GetFields(BindingFlags.Instance | BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.DeclaredOnly))
                {
                    yield return field;
                }
            }
        }

        private static void Invoke<T>(object target) where T : Attribute
        {
            for(var t = target.GetType(); t != null && t != typeof(object); t = t.BaseType)
            {
                foreach(var method in t.GetMethods(BindingFlags.Instance | BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.DeclaredOnly))
                {
                    if(method.IsDefined(typeof(T), false))
                    {
                        method.Invoke(target, null);
                    }
                }
            }
        }
    }

    // Memories as byte arrays; an access outside them reads zeros and drops writes, as Renode's system bus
    // does for unmapped addresses (with a warning).
    internal sealed class MemoryBus : IBusController
    {
        public void AddMemory(ulong baseAddress, ulong size)
        {
            memories.Add(Tuple.Create(baseAddress, new byte[size]));
        }

        public byte[] ReadBytes(ulong address, int count, bool onlyMemory = false, ICPU context = null)
        {
            var result = new byte[count];
            for(var i = 0; i < count; i++)
            {
                byte[] memory;
                var offset = Locate(address + (ulong)i, out memory);
                result[i] = memory == null ? (byte)0 : memory[offset];
            }
            return result;
        }

        public void WriteBytes(byte[] bytes, ulong address, bool onlyMemory = false, ICPU context = null)
        {
            for(var i = 0; i < bytes.Length; i++)
            {
                byte[] memory;
                var offset = Locate(address + (ulong)i, out memory);
                if(memory != null)
                {
                    memory[offset] = bytes[i];
                }
            }
        }

        public void Reset()
        {
        }

        private ulong Locate(ulong address, out byte[] memory)
        {
            foreach(var window in memories)
            {
                if(address >= window.Item1 && address - window.Item1 < (ulong)window.Item2.Length)
                {
                    memory = window.Item2;
                    return address - window.Item1;
                }
            }
            memory = null;
            return 0;
        }

        private readonly List<Tuple<ulong, byte[]>> memories = new List<Tuple<ulong, byte[]>>();
    }

    internal sealed class HarnessMachine : IMachine
    {
        public HarnessMachine(IBusController bus)
        {
            this.bus = bus;
        }

        public int Pauses { get; private set; }

        public IBusController GetSystemBus(IBusPeripheral peripheral)
        {
            return bus;
        }

        public void PauseAndRequestEmulationPause(bool precise = false)
        {
            Pauses++;
        }

        private readonly IBusController bus;
    }
}
