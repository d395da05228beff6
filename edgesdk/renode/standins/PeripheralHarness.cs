//
// Drives edgesdk's Renode peripherals outside Renode, over the stand-ins in RenodeStandins.cs, so the
// tests can run them for real (Mono) and compare them with the built-in emulator's path.
//
//   mono harness.exe FLASH_BASE FLASH_SIZE SRAM_BASE SRAM_SIZE < script
//
// builds a stand-in machine with two memories on its system bus, an Edgesdk.Npu1 wired to them and an
// Edgesdk.SiFiveTestFinisher, then runs one command per script line (numbers in hex or decimal):
//
//   load ADDRESS PATH            copy a file's bytes into memory at ADDRESS
//   write OFFSET VALUE           NPU register write (what a CPU store to npu0 + OFFSET does)
//   read OFFSET                  NPU register read; prints the value as 0x%08X
//   irq                          prints the NPU IRQ line: 1 or 0
//   reset                        the NPU's Reset() (machine reset)
//   save ADDRESS LENGTH PATH     write LENGTH bytes of memory at ADDRESS to a file
//   finish VALUE                 write VALUE to the exit device (offset 0)
//   exitcode                     prints the exit device's ExitCode
//   pauses                       prints how often a peripheral paused the emulation
//   log                          prints the log entries so far, one per line, then "end"
//
using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;

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
            var finisher = new SiFiveTestFinisher(machine);

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
                    npu.WriteDoubleWord((long)Number(words[1]), (uint)Number(words[2]));
                    break;
                case "read":
                    Console.WriteLine("0x{0:X8}", npu.ReadDoubleWord((long)Number(words[1])));
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
            return 0;
        }

        private static ulong Number(string text)
        {
            return text.StartsWith("0x", StringComparison.OrdinalIgnoreCase)
                ? ulong.Parse(text.Substring(2), NumberStyles.HexNumber, CultureInfo.InvariantCulture)
                : ulong.Parse(text, CultureInfo.InvariantCulture);
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
